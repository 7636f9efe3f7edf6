"""第 13 章的练习：温度 + top-k 之后留下哪些候选、抽样用的分布。

返回 (kept 布尔 (..., V), probs (..., V))。kept 按布尔值逐个比对（并列的候选必须都留下）；
probs 的容差按 float32 舍入推出（见 exercises 模块说明）。"""
from __future__ import annotations

import torch

from ..sampling import apply_sampling_rules
from . import Case, Exercise, register


def _reference_top_k_probs(logits, k, temperature):
    filtered = apply_sampling_rules(logits, temperature, top_k=k)
    return torch.isfinite(filtered), filtered.softmax(dim=-1)   # (留下的候选, 抽样用的分布)


def _cases_top_k_probs() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(13)
    x = torch.randn(4, 12, generator=g, dtype=torch.float64)
    ties = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.5, -1.0]], dtype=torch.float64)
    big = 60.0 * torch.randn(3, 9, generator=g)                              # float32，打分很大
    return (
        Case((x[0], 3, 1.0), "一维的 logits (V,)，k = 3，温度 1"),
        Case((x, 5, 0.7), "(B, V) 的 logits：每行各取各的前 k 个，温度 0.7"),
        Case((x, 1, 1.0), "k = 1：只剩打分最高的那个（概率为 1）"),
        Case((x, 40, 2.0), "k 比词表还大：全部留下，只有温度起作用"),
        Case((ties, 2, 1.0), "并列：第 2 名有三个一样的打分，三个都要留下"),
        Case((big, 4, 0.5), "很大的打分（float32）：先除以温度再 softmax，不能溢出"),
    )


def _generate_top_k_probs(rng) -> tuple[Case, ...]:
    """隐藏用例：一维、批量、k = 1、k ≥ V、并列、很大的打分。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    B, V = int(rng.integers(2, 6)), int(rng.integers(6, 30))
    x = torch.randn(B, V, generator=g, dtype=torch.float64)
    k = int(rng.integers(2, V))
    temp = float(rng.uniform(0.3, 2.5))
    ties = torch.randint(-2, 3, (B, V), generator=g).double()                # 整数打分：到处都是并列
    big = float(rng.uniform(40, 90)) * torch.randn(B, V, generator=g)
    return (
        Case((x[0], k, temp), "一维的 logits"),
        Case((x, k, temp), "(B, V) 的 logits"),
        Case((x, 1, temp), "k = 1"),
        Case((x, V + int(rng.integers(0, 5)), temp), "k ≥ V：全部留下"),
        Case((ties, int(rng.integers(1, 4)), 1.0), "整数打分：并列的都要留下"),
        Case((big, k, float(rng.uniform(0.3, 0.8))), "很大的打分（float32）"),
    )


register("ch13.top_k_probs", Exercise(
    title="温度 + top-k：写出真正用来抽样的分布",
    reference=_reference_top_k_probs,
    cases=_cases_top_k_probs(),
    generate=_generate_top_k_probs,
))
