"""第 9 章的练习：嵌入这一步（查表 × √d_model + 位置编码）；不建模型，按配置数出 Transformer 的参数个数。"""
from __future__ import annotations

import math

import torch

from ..model import BASE, TINY, TransformerConfig
from ..positional import sinusoidal_positional_encoding
from . import Case, Exercise, register
from .ch06 import random_config


def _embed_reference(ids: torch.Tensor, weight: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """ids (B, L) → weight[ids] · √C + pe[:L]，形状 (B, L, C)；与 Transformer.embed（dropout=0）相同。"""
    d_model = weight.shape[1]
    return weight[ids] * math.sqrt(d_model) + pe[: ids.shape[1]]   # (B, L, C) + (L, C) 按位置广播


def _cases_embed() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(9)

    def case(B, L, V, C, max_len, description, pad_tail=0):
        weight = torch.randn(V, C, generator=gen) * C ** -0.5      # 与课程包的初始化相同：N(0, 1/C)
        ids = torch.randint(0, V, (B, L), generator=gen)
        if pad_tail:
            ids[-1, -pad_tail:] = 0                                   # 最后一句右侧补齐（pad_id = 0）
        return Case((ids, weight, sinusoidal_positional_encoding(max_len, C)), description)

    return (
        case(2, 5, 11, 8, 16, "(B, L) = (2, 5)，词表 11，C = 8，位置编码表长 16"),
        case(3, 7, 20, 16, 7, "(B, L) = (3, 7)：句长正好等于位置编码表的长度"),
        case(1, 6, 9, 4, 32, "B = 1，L = 6：位置编码要按句长 L 截取，不是按批大小 B"),
        case(4, 1, 7, 6, 10, "L = 1：只有一个位置（只加 PE[0]）"),
        case(2, 9, 15, 32, 64, "(B, L) = (2, 9)，C = 32，第 2 句末尾 3 个是填充 id 0", pad_tail=3),
        case(5, 3, 12, 10, 12, "(B, L) = (5, 3)，C = 10"),
    )


def _count_parameters_reference(config: TransformerConfig) -> int:
    """不建模型，按结构数出 Transformer(config) 的参数个数（共享的张量只算一次）。"""
    C, F, N = config.d_model, config.d_ff, config.n_layers
    mha = 4 * (C * C + C)                        # q/k/v/out 四个 C×C 投影，各带 C 个偏置
    ffn = C * F + F + F * C + C                  # linear1 (C→F) + linear2 (F→C)，带偏置
    norm = 2 * C                                 # LayerNorm 的 γ 与 β
    encoder = N * (mha + ffn + 2 * norm) + (norm if config.final_norm else 0)
    decoder = N * (2 * mha + ffn + 3 * norm) + (norm if config.final_norm else 0)
    embeddings = config.src_vocab_size * C + (0 if config.share_embeddings else config.tgt_vocab_size * C)
    head = 0 if config.tie_output else config.tgt_vocab_size * C + config.tgt_vocab_size   # 不绑定：新权重 + 偏置
    return embeddings + encoder + decoder + head


def _cases_count() -> tuple[Case, ...]:
    small = TransformerConfig(src_vocab_size=20, tgt_vocab_size=18, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                              dropout=0.0, max_len=64)
    return (
        Case((TINY,), "TINY 预设：词表 16/16，C = 32，2 层，d_ff = 64，输出层绑定"),
        Case((small,), "源词表 20、目标词表 18（两张表），输出层绑定"),
        Case((BASE,), "BASE 预设（论文 base 模型）：共享 37000 词表，输出层绑定"),
        Case((BASE.replace(tie_output=False),), "BASE，但输出层不绑定：自己的权重，还多一组偏置"),
        Case((BASE.replace(share_embeddings=False),), "BASE，但源、目标各用一张词向量表"),
        Case((small.replace(final_norm=False),), "没有栈末尾的 LayerNorm（final_norm=False）"),
        Case((small.replace(norm_first=True, n_layers=3, d_ff=48),), "pre-LN、3 层、d_ff = 48"),
        Case((small.replace(tie_output=False, n_layers=1, d_model=24, n_heads=3),),
             "1 层、C = 24、3 个头，输出层不绑定"),
    )


def _generate_embed(rng) -> tuple[Case, ...]:
    """隐藏用例：随机形状、句长等于位置编码表长、B = 1、L = 1、末尾有填充。"""
    gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))

    def case(B, L, V, C, max_len, description, pad_tail=0):
        weight = torch.randn(V, C, generator=gen) * C ** -0.5
        ids = torch.randint(0, V, (B, L), generator=gen)
        if pad_tail:
            ids[-1, -pad_tail:] = 0
        return Case((ids, weight, sinusoidal_positional_encoding(max_len, C)), description)

    def r(a, b):
        return int(rng.integers(a, b))

    L = r(2, 9)
    return (
        case(r(2, 5), L, r(5, 30), 2 * r(1, 9), L + r(1, 20), "随机的 (B, L)、词表与 C"),
        case(r(2, 5), L, r(5, 30), 2 * r(1, 9), L, "句长正好等于位置编码表的长度"),
        case(1, L + r(1, 4), r(5, 30), 2 * r(1, 9), 32, "B = 1：位置编码要按句长截取，不是按批大小"),
        case(r(2, 6), 1, r(5, 30), 2 * r(1, 9), r(1, 10), "L = 1：只有一个位置"),
        case(r(2, 5), L, r(5, 30), 2 * r(4, 17), 64, "最后一句末尾有填充 id 0", pad_tail=r(1, L)),
    )


def _random_config(rng, **fixed) -> TransformerConfig:
    """随机的大配置：最大到论文 base 模型的规模（37,000 个词、d_model 512、6 层、d_ff 2048）。"""
    return random_config(rng, heads=(1, 2, 4, 8), max_vocab=37001, max_width=33, max_layers=7, max_ff=2049,
                         max_len=64, **fixed)


def _generate_count(rng) -> tuple[Case, ...]:
    """隐藏用例：共享 + 绑定、两张表 + 绑定、不绑定、没有末尾 LayerNorm、pre-LN、随机的大配置。"""
    return (
        Case((_random_config(rng, share_embeddings=True, tie_output=True),), "共享词表、输出层绑定"),
        Case((_random_config(rng, share_embeddings=False, tie_output=True),), "源、目标各一张表，输出层绑定"),
        Case((_random_config(rng, tie_output=False),), "输出层不绑定：自己的权重，还多一组偏置"),
        Case((_random_config(rng, final_norm=False),), "没有栈末尾的 LayerNorm"),
        Case((_random_config(rng, norm_first=True),), "pre-LN"),
        Case((_random_config(rng),), "随机配置"),
    )


register("ch09.embed", Exercise(
    title="嵌入：ids (B, L) → 查表 × √d_model + 位置编码 PE[:L]，得到 (B, L, C)",
    reference=_embed_reference,
    cases=_cases_embed(),
    generate=_generate_embed,
))
register("ch09.count_parameters", Exercise(
    title="不建模型，按配置数出 Transformer 的参数个数（绑定、共享的张量只算一次）",
    reference=_count_parameters_reference,
    cases=_cases_count(),
    atol=0.5,
    rtol=0.0,      # 参数个数必须一个不差：默认的相对误差 1e-5 在 6300 万上会放过几百个参数的错
    generate=_generate_count,
))
