"""第 15 章的练习：LoRA 线性层的前向——冻结的 W、b 加上 (alpha / r) · x Aᵀ Bᵀ。

参数 (x (..., in), weight (out, in), bias (out,) 或 None, lora_A (r, in), lora_B (out, r), alpha)，
返回 (..., out)。r 从 lora_A 的行数读出。容差按 float 舍入自动推出（见 exercises 模块说明）。"""
from __future__ import annotations

import torch

from . import Case, Exercise, register


def _reference_lora_forward(x, weight, bias, lora_A, lora_B, alpha):
    r = lora_A.shape[0]
    out = x @ weight.T + (0 if bias is None else bias)
    return out + (alpha / r) * ((x @ lora_A.T) @ lora_B.T)          # (..., in) -> (..., r) -> (..., out)


def _make(g, batch, d_in, d_out, r, *, bias=True, zero_B=False, dtype=torch.float64):
    x = torch.randn(*batch, d_in, generator=g, dtype=dtype)
    w = torch.randn(d_out, d_in, generator=g, dtype=dtype) / d_in ** 0.5
    b = torch.randn(d_out, generator=g, dtype=dtype) if bias else None
    A = torch.randn(r, d_in, generator=g, dtype=dtype) / d_in ** 0.5
    B = torch.zeros(d_out, r, dtype=dtype) if zero_B else torch.randn(d_out, r, generator=g, dtype=dtype)
    return x, w, b, A, B


def _cases_lora_forward() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(15)
    return (
        Case((*_make(g, (5,), 6, 4, 2), 4.0), "(N, in) 的输入，in = 6、out = 4，r = 2，alpha = 4（缩放 2）"),
        Case((*_make(g, (2, 3), 8, 8, 4), 4.0), "(B, T, in) 的输入，r = 4，alpha = 4（缩放 1）"),
        Case((*_make(g, (4,), 5, 7, 1), 3.0), "r = 1：适配器只有一个方向，alpha = 3"),
        Case((*_make(g, (3,), 6, 4, 3, bias=False), 1.5), "没有偏置（bias = None），缩放 0.5"),
        Case((*_make(g, (3,), 6, 4, 2, zero_B=True), 8.0), "B 全为 0（刚装上的适配器）：输出就是原来的线性层"),
        Case((*_make(g, (2, 4), 16, 12, 8, dtype=torch.float32), 16.0), "float32，r = 8，alpha = 16"),
    )


def _generate_lora_forward(rng) -> tuple[Case, ...]:
    """隐藏用例：随机形状、秩与 alpha；方阵与非方阵；无偏置；B = 0；float32。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    d_in, d_out = int(rng.integers(3, 20)), int(rng.integers(3, 20))
    r = int(rng.integers(1, min(d_in, d_out) + 1))
    alpha = lambda: float(rng.choice([1.0, 2.0, 8.0, 16.0]) * rng.uniform(0.5, 2))   # noqa: E731
    n = int(rng.integers(1, 7))
    r2 = int(rng.integers(2, 6))                                   # r ≥ 2：缩放写成 alpha 的错误一定露馅
    return (
        Case((*_make(g, (n,), d_in, d_out, r), alpha()), "(N, in) 的输入"),
        Case((*_make(g, (2, n), d_in, d_in, r), alpha()), "(B, T, in)，方阵"),
        Case((*_make(g, (n,), d_in, d_out, 1), alpha()), "r = 1"),
        Case((*_make(g, (n,), d_in, d_out, r2, bias=False), alpha()), "没有偏置"),
        Case((*_make(g, (n,), d_in, d_out, r, zero_B=True), alpha()), "B = 0"),
        Case((*_make(g, (n,), d_in, d_out, r2, dtype=torch.float32), alpha()), "float32"),
    )


register("ch15.lora_forward", Exercise(
    title="LoRA 线性层的前向：冻结的 W x + b，加上 (alpha / r) · B A x",
    reference=_reference_lora_forward,
    cases=_cases_lora_forward(),
    generate=_generate_lora_forward,
))
