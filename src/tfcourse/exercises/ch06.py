"""第 6 章的练习：手写 LayerNorm；按公式数出一个配置的参数个数。"""
from __future__ import annotations

import torch

from ..model import TransformerConfig, Transformer, count_parameters
from . import Case, Exercise, register


def _layer_norm_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """torch 的 LayerNorm：沿最后一维（每个 token 的 C 个特征）归一化，有偏方差，eps 加在根号里。"""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def _cases_layer_norm() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(6)

    def randn(*shape, scale=1.0, shift=0.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + shift

    def affine(C):
        return randn(C, scale=0.5, shift=1.0), randn(C, scale=0.5)    # γ 在 1 附近，β 在 0 附近

    ones8, zeros8 = torch.ones(8, dtype=torch.float64), torch.zeros(8, dtype=torch.float64)
    constant = randn(2, 3, 8)
    constant[0, 1] = 3.0                                           # 这个 token 的 8 个特征全相等：方差为 0
    return (
        Case((randn(2, 3, 8, scale=2.0, shift=1.0), ones8, zeros8, 1e-5), "(B, T, C) = (2, 3, 8)，γ = 1、β = 0（nn.LayerNorm 的初始值）"),
        Case((randn(2, 4, 6), *affine(6), 1e-5), "(B, T, C) = (2, 4, 6)，随机的 γ、β"),
        Case((randn(1, 3, 4, scale=0.3), *affine(4), 0.5), "eps = 0.5：eps 放在根号里还是根号外，结果差很多"),
        Case((constant, *affine(8), 1e-5), "有一个 token 的特征全相等（方差为 0）：输出应等于 β，不能是 NaN"),
        Case((randn(2, 5, 2), *affine(2), 1e-5), "C = 2：有偏方差（除以 C）和无偏方差（除以 C − 1）差一倍"),
        Case((randn(5, 6, scale=3.0), *affine(6), 1e-5), "二维输入 (T, C)：同样只沿最后一维归一化"),
        Case((randn(2, 3, 16, scale=0.01, shift=1000.0), *affine(16), 1e-5), "均值 1000、起伏只有 0.01 的特征"),
    )


def _count_reference(config: TransformerConfig) -> int:
    """直接造出模型来数（绑定、共享的张量只算一次）。"""
    return count_parameters(Transformer(config))


def _cases_count() -> tuple[Case, ...]:
    small = TransformerConfig(src_vocab_size=100, tgt_vocab_size=100, d_model=64, n_heads=8, n_layers=3, d_ff=256,
                              dropout=0.0, max_len=32, share_embeddings=True, tie_output=True)
    return (
        Case((small,), "与 BASE 同样的摆法（共享词表、输出层绑定），只是小：V = 100，C = 64，N = 3，F = 256"),
        Case((TransformerConfig(src_vocab_size=16, tgt_vocab_size=16, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                                dropout=0.0, max_len=64),), "TINY 预设：源、目标各一张表（不共享），输出层绑定"),
        Case((small.replace(src_vocab_size=50, tgt_vocab_size=30, share_embeddings=False, tie_output=False),),
             "源、目标词表大小不同（50 与 30），输出层不绑定：它有自己的权重和偏置"),
        Case((small.replace(tie_output=False),), "共享词表，但输出层不绑定"),
        Case((small.replace(final_norm=False, norm_first=True),), "pre-LN、去掉两个末尾 LayerNorm"),
        Case((small.replace(n_heads=1),), "头数从 8 改成 1（参数个数变不变？）"),
        Case((small.replace(d_model=16, n_heads=2, n_layers=1, d_ff=8, src_vocab_size=7, tgt_vocab_size=7),),
             "只有 1 层，d_ff = 8 比 d_model = 16 还小"),
    )


def _torch_gen(rng) -> torch.Generator:
    return torch.Generator().manual_seed(int(rng.integers(2 ** 62)))


def _generate_layer_norm(rng) -> tuple[Case, ...]:
    """隐藏用例：γ = 1 β = 0、随机 γ β、较大的 eps、方差为 0 的 token、C = 2、二维输入、均值很大起伏很小。"""
    gen = _torch_gen(rng)

    def randn(*shape, scale=1.0, shift=0.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + shift

    def affine(C):
        return randn(C, scale=0.5, shift=1.0), randn(C, scale=0.5)

    B, T, C = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(3, 17))
    constant = randn(B, T, C)
    constant[int(rng.integers(B)), int(rng.integers(T))] = float(rng.normal() * 3)
    return (
        Case((randn(B, T, C, scale=2.0, shift=1.0), torch.ones(C, dtype=torch.float64),
              torch.zeros(C, dtype=torch.float64), 1e-5), "γ = 1、β = 0（nn.LayerNorm 的初始值）"),
        Case((randn(B, T, C), *affine(C), 1e-5), "随机的 γ、β"),
        Case((randn(B, T, C, scale=0.3), *affine(C), float(rng.uniform(0.1, 1.0))),
             "较大的 eps：eps 放在根号里还是根号外，结果差很多"),
        Case((constant, *affine(C), 1e-5), "有一个 token 的特征全相等（方差为 0）"),
        Case((randn(B, T, 2), *affine(2), 1e-5), "C = 2：有偏方差与无偏方差差一倍"),
        Case((randn(T + 1, C, scale=3.0), *affine(C), 1e-5), "二维输入 (T, C)"),
        Case((randn(B, T, C, scale=0.01, shift=float(rng.uniform(500, 2000))), *affine(C), 1e-5),
             "均值很大、起伏很小的特征"),
    )


def random_config(rng, *, heads=(1, 2, 3, 4), max_vocab=60, max_width=5, max_layers=4, max_ff=65,
                  max_len=16, **fixed) -> TransformerConfig:
    """隐藏用例用的随机 TransformerConfig（第 6、9 章数参数的练习共用）；fixed 里的字段照给定的值。

    d_model = 2·H·k（k 取 1 … max_width − 1），词表 5 … max_vocab − 1，层数 1 … max_layers − 1，d_ff 4 … max_ff − 1。
    """
    H = int(rng.choice(heads))
    V = int(rng.integers(5, max_vocab))
    share = bool(rng.integers(2))
    values = dict(src_vocab_size=V, tgt_vocab_size=V if share else int(rng.integers(5, max_vocab)),
                  d_model=2 * H * int(rng.integers(1, max_width)), n_heads=H,
                  n_layers=int(rng.integers(1, max_layers)), d_ff=int(rng.integers(4, max_ff)),
                  dropout=0.0, max_len=max_len, share_embeddings=share,
                  tie_output=bool(rng.integers(2)), norm_first=bool(rng.integers(2)), final_norm=bool(rng.integers(2)))
    values.update(fixed)
    if values["share_embeddings"]:
        values["tgt_vocab_size"] = values["src_vocab_size"]
    return TransformerConfig(**values)


def _generate_count(rng) -> tuple[Case, ...]:
    """隐藏用例：共享 + 绑定、两张表 + 绑定、两张表不绑定、共享不绑定、去掉末尾 LayerNorm、随机配置。"""
    return (
        Case((random_config(rng, share_embeddings=True, tie_output=True),), "共享词表、输出层绑定"),
        Case((random_config(rng, share_embeddings=False, tie_output=True),), "源、目标各一张表，输出层绑定"),
        Case((random_config(rng, share_embeddings=False, tie_output=False),), "两张表，输出层不绑定（有自己的权重和偏置）"),
        Case((random_config(rng, share_embeddings=True, tie_output=False),), "共享词表，但输出层不绑定"),
        Case((random_config(rng, final_norm=False),), "去掉两个末尾 LayerNorm"),
        Case((random_config(rng),), "随机配置"),
    )


register("ch06.layer_norm", Exercise(
    title="手写 LayerNorm：沿最后一维归一化，再乘 γ、加 β",
    reference=_layer_norm_reference,
    cases=_cases_layer_norm(),
    generate=_generate_layer_norm,
))
register("ch06.count_parameters", Exercise(
    title="按公式数出一个 TransformerConfig 的参数个数（不造模型）",
    reference=_count_reference,
    cases=_cases_count(),
    atol=0.5,           # 参数个数是整数：差 1 个也算错
    rtol=0.0,
    generate=_generate_count,
))
