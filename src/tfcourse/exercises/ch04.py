"""第 4 章的练习：把 (B, T, C) 拆成多个头；用普通矩阵写出多头注意力的前向计算。"""
from __future__ import annotations

import torch

from .. import attention
from . import Case, Exercise, register


def _randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale


def _split_heads_reference(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)   # (B, T, C) -> (B, T, H, D) -> (B, H, T, D)


def _cases_split_heads() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(4)
    arange = torch.arange(2 * 3 * 4, dtype=torch.float64).reshape(2, 3, 4)
    return (
        Case((arange, 2), "x = arange(24) 排成 (B, T, C) = (2, 3, 4)，H = 2：看得清每个数该去哪里"),
        Case((_randn(gen, 2, 5, 8), 4), "(B, T, C) = (2, 5, 8)，H = 4"),
        Case((_randn(gen, 1, 4, 6), 3), "(B, T, C) = (1, 4, 6)，H = 3"),
        Case((_randn(gen, 2, 3, 6), 1), "H = 1：只有一个头"),
        Case((_randn(gen, 2, 1, 8), 2), "T = 1：只有一个位置"),
        Case((_randn(gen, 1, 3, 6), 6), "H = C：每个头只分到 D = 1 维"),
    )


def _mha_forward_reference(x, W_q, W_k, W_v, W_o, n_heads):
    """用包里的 MultiHeadAttention（无偏置）算；nn.Linear 算的是 x @ weight.T，所以装入 W 的转置。"""
    mha = attention.MultiHeadAttention(x.shape[-1], n_heads, bias=False).to(x.dtype)
    with torch.no_grad():
        for proj, W in zip((mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj), (W_q, W_k, W_v, W_o)):
            proj.weight.copy_(W.T)
        return mha(x)                                             # (输出 (B, T, C), 权重 (B, H, T, T))


def _cases_mha_forward() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(2017)

    def case(B, T, C, H, description):
        weights = tuple(_randn(gen, C, C, scale=C ** -0.5) for _ in range(4))   # W_q, W_k, W_v, W_o
        return Case((_randn(gen, B, T, C), *weights, H), description)

    return (
        case(2, 4, 8, 2, "(B, T, C) = (2, 4, 8)，H = 2"),
        case(1, 5, 6, 3, "(B, T, C) = (1, 5, 6)，H = 3，每个头 D = 2"),
        case(2, 3, 4, 1, "H = 1：就是第 3 章的单头注意力，前后各加投影"),
        case(1, 1, 4, 2, "T = 1：只有一个位置，每个头的权重都是 1"),
        case(2, 4, 4, 4, "H = C：每个头只分到 D = 1 维"),
        case(3, 6, 12, 4, "(B, T, C) = (3, 6, 12)，H = 4"),
    )


def _torch_gen(rng) -> torch.Generator:
    return torch.Generator().manual_seed(int(rng.integers(2 ** 62)))


def _random_shape(rng, n_heads=None):
    H = int(rng.integers(1, 5)) if n_heads is None else n_heads
    return int(rng.integers(1, 4)), int(rng.integers(1, 7)), H * int(rng.integers(1, 4)), H   # B, T, C, H


def _generate_split_heads(rng) -> tuple[Case, ...]:
    """隐藏用例：随机形状、H = 1、T = 1、H = C（每个头 D = 1）。"""
    gen = _torch_gen(rng)
    B, T, C, H = _random_shape(rng)
    B2, T2, C2, _ = _random_shape(rng, n_heads=1)
    H3 = int(rng.integers(2, 6))
    return (
        Case((_randn(gen, B, T, C), H), "随机的 (B, T, C) 与 H"),
        Case((_randn(gen, B2, T2, C2), 1), "H = 1：只有一个头"),
        Case((_randn(gen, B, 1, C), H), "T = 1：只有一个位置"),
        Case((_randn(gen, B, T, H3), H3), "H = C：每个头只分到 D = 1 维"),
    )


def _generate_mha_forward(rng) -> tuple[Case, ...]:
    """隐藏用例：随机形状、H = 1、T = 1、H = C。"""
    gen = _torch_gen(rng)

    def case(B, T, C, H, description):
        weights = tuple(_randn(gen, C, C, scale=C ** -0.5) for _ in range(4))
        return Case((_randn(gen, B, T, C), *weights, H), description)

    B, T, C, H = _random_shape(rng)
    H4 = int(rng.integers(2, 5))
    return (
        case(B, T, C, H, "随机的 (B, T, C) 与 H"),
        case(B, T, C, 1, "H = 1：单头注意力，前后各加投影"),
        case(B, 1, 2 * H4, H4, "T = 1：只有一个位置"),
        case(B, T, H4, H4, "H = C：每个头只分到 D = 1 维"),
        case(*_random_shape(rng, n_heads=int(rng.integers(2, 5))), "随机的多头"),
    )


register("ch04.split_heads", Exercise(
    title="把 (B, T, C) 拆成 H 个头：(B, H, T, D)，D = C / H",
    reference=_split_heads_reference,
    cases=_cases_split_heads(),
    generate=_generate_split_heads,
))
register("ch04.mha_forward", Exercise(
    title="用普通矩阵写出多头自注意力：返回 (输出 (B, T, C), 每个头的权重 (B, H, T, T))",
    reference=_mha_forward_reference,
    cases=_cases_mha_forward(),
    generate=_generate_mha_forward,
))
