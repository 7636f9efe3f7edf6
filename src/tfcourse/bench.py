"""计时小工具：把"快/慢"变成测量出来的数字。第 1 章引入，第 16 章大量使用。"""
from __future__ import annotations

import math
import time

import numpy as np

from ._checks import positive_int

__all__ = ["median_time", "rnn_vs_attention_timing"]


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
