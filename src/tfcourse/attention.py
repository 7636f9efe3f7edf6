"""注意力（attention）：打分 → softmax → 加权求和。

第 1 章引入 numpy 版的 `softmax` 与 `simple_attention`（不缩放、无投影），
第 2–3 章会在这里加上 Q/K/V 与缩放点积注意力的 torch 实现。
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float_array, finite_number, positive_int

__all__ = ["softmax", "simple_attention", "first_token_attention_readout"]


def softmax(x, axis: int = -1) -> np.ndarray:
    """数值稳定的 softmax：先减去最大值再取指数，结果沿 axis 和为 1。"""
    x = as_float_array(x, "softmax 的输入 x", ndim=tuple(range(1, 33)))
    z = x - x.max(axis=axis, keepdims=True)                  # 防止 exp 溢出
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def simple_attention(query, keys, values=None):
    """最朴素的点积注意力（numpy）：scores = keys · query，weights = softmax(scores)。

    query: (D,)；keys: (S, D)；values: (S, D_v)，缺省时等于 keys。
    返回 (输出 (D_v,), 权重 (S,), 打分 (S,))。
    """
    q = as_float_array(query, "query", ndim=1)
    k = as_float_array(keys, "keys", ndim=2)
    if k.shape[1] != q.shape[0]:
        raise ValueError(
            f"keys 的形状应为 (S, {q.shape[0]})（每个键与 query 同维），实际为 {k.shape}。"
        )
    v = k if values is None else as_float_array(values, "values", ndim=2)
    if v.shape[0] != k.shape[0]:
        raise ValueError(f"values 的行数应等于 keys 的行数 {k.shape[0]}，实际形状为 {v.shape}。")
    scores = k @ q                                           # (S, D) @ (D,) -> (S,)
    weights = softmax(scores)                                # (S,)，和为 1
    return weights @ v, weights, scores                      # (S,) @ (S, D_v) -> (D_v,)


def first_token_attention_readout(length: int, alpha: float = 0.6, first: float = 1.0) -> float:
    """与 `tfcourse.rnn.final_hidden_state` 对照的注意力版本。

    输入 [first, 0, 0, …]（长 length）。注意力给开头位置权重 alpha，其余 1 − alpha
    平均分给后面的位置（权重和为 1），直接加权求和：没有逐步传递，也就没有连乘。
    """
    length = positive_int(length, "序列长度 length")
    alpha = finite_number(alpha, "权重 alpha")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"权重 alpha 应在 [0, 1] 之间，实际为 {alpha}。")
    if length == 1 and alpha != 1.0:
        raise ValueError("序列只有 1 个位置时，权重只能全部给它（alpha = 1）。")
    seq = np.zeros(length)
    seq[0] = finite_number(first, "开头的值 first")
    weights = np.full(length, (1.0 - alpha) / max(length - 1, 1))
    weights[0] = alpha
    return float(weights @ seq)
