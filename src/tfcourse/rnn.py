"""循环神经网络（RNN）的最小实现，用来测量"遗忘"。第 1 章引入。

记号：h_t = tanh(W_hh · h_{t-1} + W_xh · x_t)。标量版本里 W_hh、W_xh 是数；
向量版本里 W_hh 形状 (H, H)，W_xh 形状 (H, I)，输入序列形状 (T, I)。
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float_array, finite_number, positive_int

__all__ = [
    "tanh_derivative",
    "impulse_sequence",
    "rnn_step",
    "rnn_forward",
    "final_hidden_state",
    "memory_curves",
]


def tanh_derivative(z):
    """tanh 的导数 1 − tanh²(z)，逐元素计算。"""
    t = np.tanh(np.asarray(z, dtype=np.float64))
    return 1.0 - t * t


def impulse_sequence(length: int, first: float = 1.0) -> np.ndarray:
    """长度为 length 的序列：开头是 first，其余全是 0，例如 [1, 0, 0, …]。"""
    length = positive_int(length, "序列长度 length")
    seq = np.zeros(length)
    seq[0] = finite_number(first, "开头的值 first")
    return seq


def rnn_step(h, x, w_hh, w_xh):
    """RNN 的一步：tanh(W_hh·h + W_xh·x)。标量用乘法，矩阵用 @（不是逐元素的 *）。"""
    if np.ndim(w_hh) == 0:
        return np.tanh(w_hh * h + w_xh * x)
    return np.tanh(w_hh @ h + w_xh @ x)                       # (H,H)@(H,) + (H,I)@(I,) -> (H,)


def rnn_forward(inputs, w_hh, w_xh, h0=None) -> np.ndarray:
    """按时间顺序逐步计算，返回每一步的隐藏状态。

    标量 RNN：inputs 形状 (T,)，返回 (T,)。
    向量 RNN：inputs 形状 (T, I)，w_hh (H, H)，w_xh (H, I)，返回 (T, H)。
    h0 缺省为全零。
    """
    if np.ndim(w_hh) == 0 and np.ndim(w_xh) == 0:
        w_hh = finite_number(w_hh, "W_hh")
        w_xh = finite_number(w_xh, "W_xh")
        xs = as_float_array(inputs, "标量 RNN 的输入序列 inputs", ndim=1)
        if xs.size == 0:
            raise ValueError("输入序列 inputs 至少要有 1 个时间步，实际长度为 0。")
        h = 0.0 if h0 is None else finite_number(h0, "初始状态 h0")
        states = np.empty(xs.shape[0])
        for t, x in enumerate(xs):                           # 串行：第 t 步必须等第 t-1 步
            h = rnn_step(h, x, w_hh, w_xh)
            states[t] = h
        return states

    w_hh = as_float_array(w_hh, "W_hh", ndim=2)
    w_xh = as_float_array(w_xh, "W_xh", ndim=2)
    xs = as_float_array(inputs, "向量 RNN 的输入序列 inputs", ndim=2)
    H = w_hh.shape[0]
    if w_hh.shape != (H, H):
        raise ValueError(f"W_hh 应为方阵 (H, H)，实际形状为 {w_hh.shape}。")
    if w_xh.shape[0] != H:
        raise ValueError(f"W_xh 的行数应等于隐藏维度 H={H}，实际形状为 {w_xh.shape}。")
    if xs.shape[1] != w_xh.shape[1]:
        raise ValueError(
            f"inputs 的形状应为 (T, {w_xh.shape[1]})（与 W_xh 的列数一致），实际为 {xs.shape}。"
        )
    if xs.shape[0] == 0:
        raise ValueError("输入序列 inputs 至少要有 1 个时间步，实际长度为 0。")
    h = np.zeros(H) if h0 is None else as_float_array(h0, "初始状态 h0", ndim=1)
    if h.shape != (H,):
        raise ValueError(f"h0 的形状应为 ({H},)，实际为 {h.shape}。")
    states = np.empty((xs.shape[0], H))
    for t in range(xs.shape[0]):
        h = rnn_step(h, xs[t], w_hh, w_xh)                    # (H,)
        states[t] = h
    return states


def final_hidden_state(length: int, w_hh: float = 0.9, w_xh: float = 0.5) -> float:
    """把 [1, 0, 0, …]（长 length）喂给标量 RNN，返回最后一步的隐藏状态 h_L。

    后面的输入全是 0，所以 h_L 只反映开头那个 1 还剩多少。
    """
    return float(rnn_forward(impulse_sequence(length), w_hh, w_xh)[-1])


def memory_curves(w_hh_values, w_xh_values, max_len: int) -> np.ndarray:
    """在一组 (W_hh, W_xh) 上预先算好衰减曲线，供小部件离线使用。

    返回形状 (len(w_hh_values), len(w_xh_values), max_len) 的数组，
    [i, j, t] 是参数 (w_hh_values[i], w_xh_values[j]) 下、输入 [1, 0, 0, …] 的第 t+1 步隐藏状态，
    也就是长度 L = t+1 的序列的末尾隐藏状态。
    """
    max_len = positive_int(max_len, "最大序列长度 max_len")
    w_hh = as_float_array(w_hh_values, "w_hh_values", ndim=1)
    w_xh = as_float_array(w_xh_values, "w_xh_values", ndim=1)
    if w_hh.size == 0 or w_xh.size == 0:
        raise ValueError("w_hh_values 和 w_xh_values 都至少要有一个取值。")
    W_hh, W_xh = np.meshgrid(w_hh, w_xh, indexing="ij")        # (n_hh, n_xh)
    out = np.empty(W_hh.shape + (max_len,))
    h = np.zeros_like(W_hh)
    for t in range(max_len):
        x = 1.0 if t == 0 else 0.0
        h = np.tanh(W_hh * h + W_xh * x)                      # 每组参数各自的标量 RNN，逐元素
        out[..., t] = h
    return out
