"""第 16 章的练习：在线 softmax（online softmax）的一步——分块注意力（tiled_attention）每读一块键做的事。

返回 (m_new (T,), l_new (T,), acc_new (T, D_v))；容差按 float32 舍入推出（见 exercises 模块说明）。"""
from __future__ import annotations

import torch

from . import Case, Exercise, register


def _reference_online_softmax_step(m, l, acc, scores, values):
    m_new = torch.maximum(m, scores.amax(dim=-1))                # (T,)：到目前为止的最大打分
    corr = torch.exp(m - m_new)                                  # 旧的和按新的最大值缩小；m = -inf 时为 0
    p = torch.exp(scores - m_new[:, None])                       # (T, B)：这一块的 exp，不会溢出
    return m_new, l * corr + p.sum(dim=-1), acc * corr[:, None] + p @ values


def _state(T, D, g, dtype=torch.float64):
    """读过一块之后的状态（m 有限）：用参考实现从空状态走一步得到。"""
    m0 = torch.full((T,), float("-inf"), dtype=dtype)
    s0 = torch.randn(T, 5, generator=g, dtype=dtype)
    v0 = torch.randn(5, D, generator=g, dtype=dtype)
    return _reference_online_softmax_step(m0, torch.zeros(T, dtype=dtype), torch.zeros(T, D, dtype=dtype), s0, v0)


def _cases() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(16)
    T, D = 4, 3
    empty = (torch.full((T,), float("-inf"), dtype=torch.float64), torch.zeros(T, dtype=torch.float64),
             torch.zeros(T, D, dtype=torch.float64))
    s = torch.randn(T, 6, generator=g, dtype=torch.float64)
    v = torch.randn(6, D, generator=g, dtype=torch.float64)
    m, l, acc = _state(T, D, g)
    masked = s.clone()
    masked[:, 1::2] = float("-inf")                              # 这一块里一半的键被掩码屏蔽
    return (
        Case((*empty, s, v), "第一块：m 还是 -inf，l 和 acc 都是 0"),
        Case((m, l, acc, s + 3.0, v), "新一块的打分更大：旧的 l 和 acc 都要按 exp(m - m_new) 缩小"),
        Case((m, l, acc, s - 3.0, v), "新一块的打分更小：最大值不变"),
        Case((m, l, acc, masked, v), "新一块里有被屏蔽的键（打分 -inf）：它们的权重是 0"),
        Case((m + 500.0, l, acc, s + 500.0, v), "很大的打分（500 左右）：直接 exp 会溢出"),
    )


def _generate(rng) -> tuple[Case, ...]:
    """隐藏用例：第一块、更大/更小的新块、被屏蔽的键、很大的打分，形状随机。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    T, D, B = int(rng.integers(2, 7)), int(rng.integers(1, 6)), int(rng.integers(1, 9))
    s = torch.randn(T, B, generator=g, dtype=torch.float64)
    v = torch.randn(B, D, generator=g, dtype=torch.float64)
    m, l, acc = _state(T, D, g)
    empty = (torch.full((T,), float("-inf"), dtype=torch.float64), torch.zeros(T, dtype=torch.float64),
             torch.zeros(T, D, dtype=torch.float64))
    masked = s.clone()
    masked[:, : max(1, B // 2)] = float("-inf")
    masked[:, -1] = s[:, -1]                                     # 每行至少留一个键
    shift = float(rng.uniform(1.0, 4.0))
    big = float(rng.uniform(300, 700))
    return (
        Case((*empty, s, v), "第一块"),
        Case((m, l, acc, s + shift, v), "更大的新块"),
        Case((m, l, acc, s - shift, v), "更小的新块"),
        Case((m, l, acc, masked, v), "有被屏蔽的键"),
        Case((m + big, l, acc, s + big, v), "很大的打分"),
    )


register("ch16.online_softmax_step", Exercise(
    title="在线 softmax 的一步：读进一块键，更新最大值、分母和加权和",
    reference=_reference_online_softmax_step,
    cases=_cases(),
    generate=_generate,
))
