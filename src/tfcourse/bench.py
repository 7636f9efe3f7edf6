"""计时小工具：把"快/慢"变成测量出来的数字，并拆开 RNN 的时间花在哪里。第 1 章引入，第 16 章大量使用。"""
from __future__ import annotations

import math
import time

import numpy as np

from ._checks import positive_int

__all__ = ["median_time", "rnn_vs_attention_timing", "rnn_variants", "rnn_timing_breakdown"]


def median_time(fn, repeats: int = 5, warmup: int = 1) -> float:
    """运行 fn() 若干次，返回耗时的中位数（秒）。先预热 warmup 次，不计入。"""
    repeats = positive_int(repeats, "repeats")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def rnn_vs_attention_timing(lengths, batch: int = 16, d: int = 64, repeats: int = 5, seed: int = 0):
    """同一批随机输入 (B, T, d)，比较两种读法的墙钟时间（torch，CPU）。

    - RNN：h_t = tanh(h_{t-1} W_hh + x_t W_xh)，必须按 t = 1…T 串行算 T 步；
    - 自注意力：softmax(X Xᵀ/√d) X，所有位置在几次矩阵乘法里一起算完。
    返回每个长度一行的字典列表：T、两者的毫秒数、串行步数和大致的乘加次数。
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    w_hh = torch.randn(d, d, generator=gen) / math.sqrt(d)
    w_xh = torch.randn(d, d, generator=gen) / math.sqrt(d)

    def rnn(x):                                              # x: (B, T, d)
        h = torch.zeros(x.shape[0], d)
        for t in range(x.shape[1]):                          # 第 t 步要等第 t-1 步
            h = torch.tanh(h @ w_hh + x[:, t] @ w_xh)        # (B, d)
        return h

    def attention(x):                                        # x: (B, T, d)
        scores = x @ x.transpose(1, 2) / math.sqrt(d)        # (B, T, T)，所有位置两两打分
        return scores.softmax(dim=-1) @ x                    # (B, T, d)

    rows = []
    with torch.inference_mode():
        for T in lengths:
            T = positive_int(T, "序列长度 T")
            x = torch.randn(batch, T, d, generator=gen)
            rows.append(
                {
                    "T": T,
                    "rnn_ms": 1e3 * median_time(lambda x=x: rnn(x), repeats),
                    "attention_ms": 1e3 * median_time(lambda x=x: attention(x), repeats),
                    "rnn_sequential_steps": T,
                    "attention_sequential_steps": 1,
                    "rnn_macs": 2 * batch * T * d * d,
                    "attention_macs": 2 * batch * T * T * d,
                }
            )
    return rows


def rnn_variants(w_hh, w_xh) -> dict:
    """同一组权重 (d, d) 的三种 RNN 写法。

    输入 x (B, T, d)，都返回最后一步的隐藏状态 (B, d)：
    - "loop"：Python 循环，每步各算一次 x_t W_xh 和 h W_hh；
    - "loop_batched"：x_t W_xh 不依赖 h，在循环外一次算完，
      循环里只剩 h W_hh；
    - "nn_rnn"：torch.nn.RNN（同样的权重、无偏置），
      也先批量算输入投影，循环写在 C++ 里。
    """
    import torch

    d = w_hh.shape[0]
    cell = torch.nn.RNN(d, d, bias=False, batch_first=True)
    with torch.no_grad():                  # nn.RNN 算 x @ weight.T：存转置
        cell.weight_ih_l0.copy_(w_xh.T)
        cell.weight_hh_l0.copy_(w_hh.T)

    def loop(x):                           # x: (B, T, d)
        h = x.new_zeros(x.shape[0], d)
        for t in range(x.shape[1]):        # 第 t 步要等第 t-1 步
            # 每步两次小矩阵乘法
            h = torch.tanh(h @ w_hh + x[:, t] @ w_xh)      # (B, d)
        return h

    def loop_batched(x):
        xw = x @ w_xh                      # (B, T, d)：所有位置一次算完
        h = x.new_zeros(x.shape[0], d)
        for t in range(x.shape[1]):
            # 只剩必须等的那一半
            h = torch.tanh(h @ w_hh + xw[:, t])            # (B, d)
        return h

    def nn_rnn(x):
        return cell(x)[1][0]               # h_n: (1, B, d) -> (B, d)

    return {"loop": loop, "loop_batched": loop_batched, "nn_rnn": nn_rnn}


def rnn_timing_breakdown(lengths, batch: int = 16, d: int = 64, repeats: int = 5, seed: int = 0):
    """把"RNN 比注意力慢多少"拆开量（torch，CPU，同一批随机输入 (B, T, d)）。

    每个长度 T 量五个墙钟时间（毫秒；五种算法轮流跑 repeats 轮，各取最快的一次）：
    - loop_ms / loop_batched_ms / nn_rnn_ms：rnn_variants 的三种写法；
    - no_wait_ms：与 RNN 同样多的乘加（X W_xh 和 X W_hh 两次大矩阵乘法加 tanh），
      但各位置互不等待——如果没有串行，RNN 的活本来要花多久；
    - attention_ms：自注意力 softmax(X Xᵀ/√d) X。
    另给出串行步数和乘加次数（与 rnn_vs_attention_timing 相同的记法）。
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    w_hh = torch.randn(d, d, generator=gen) / math.sqrt(d)
    w_xh = torch.randn(d, d, generator=gen) / math.sqrt(d)
    variants = rnn_variants(w_hh, w_xh)

    def no_wait(x):                                          # 乘加与 RNN 相同，但没有依赖链
        return torch.tanh(x @ w_xh + x @ w_hh)               # (B, T, d)

    def attention(x):
        scores = x @ x.transpose(1, 2) / math.sqrt(d)        # (B, T, T)
        return scores.softmax(dim=-1) @ x                    # (B, T, d)

    fns = {f"{name}_ms": fn for name, fn in variants.items()}
    fns.update(no_wait_ms=no_wait, attention_ms=attention)
    rows = []
    with torch.inference_mode():
        for T in lengths:
            T = positive_int(T, "序列长度 T")
            x = torch.randn(batch, T, d, generator=gen)
            # 五种算法轮流各跑一次、重复 repeats 轮，各取最快的一次：
            # 机器忙起来时，几种算法受到的干扰差不多
            row = {"T": T}
            for key, fn in fns.items():
                fn(x)                                        # 预热
                row[key] = math.inf
            for _ in range(positive_int(repeats, "repeats")):
                for key, fn in fns.items():
                    t0 = time.perf_counter()
                    fn(x)
                    row[key] = min(row[key], 1e3 * (time.perf_counter() - t0))
            row.update(
                rnn_sequential_steps=T,
                attention_sequential_steps=1,
                rnn_macs=2 * batch * T * d * d,
                attention_macs=2 * batch * T * T * d,
            )
            rows.append(row)
    return rows
