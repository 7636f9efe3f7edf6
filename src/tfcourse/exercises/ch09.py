"""第 9 章的练习：嵌入这一步（查表 × √d_model + 位置编码）；用 torch.nn.Transformer 的两个栈算出课程包模型的 logits。"""
from __future__ import annotations

import math
import warnings

import torch
from torch import nn

from ..model import Transformer, TransformerConfig, copy_from_torch
from ..positional import sinusoidal_positional_encoding
from . import Case, Exercise, register


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


def _torch_logits_reference(model: Transformer, ref: nn.Transformer, src: torch.Tensor,
                            tgt: torch.Tensor) -> torch.Tensor:
    """要求读者的函数与课程包模型完全一致：logits (B, T, V) = model(src, tgt)（填充位置也算）。"""
    with torch.no_grad():
        return model(src, tgt)


def _model_pair(seed: int, *, norm_first: bool = False, pad_id: int = 0, src_vocab: int = 13,
                tgt_vocab: int = 11, d_model: int = 16, n_heads: int = 2, n_layers: int = 2, d_ff: int = 32):
    """一对权重相同的模型：torch.nn.Transformer（两个栈）与课程包的 Transformer（栈的权重从它抄来）。

    都换成 float64、eval()、dropout 为 0：正确的写法与参考答案只差 1e-15 量级，错的写法差 0.01 以上。"""
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # pre-LN 时 torch 提示用不了 nested tensor
        torch.manual_seed(seed)
        ref = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout=0.0, batch_first=True,
                             norm_first=norm_first)
        config = TransformerConfig(src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, d_model=d_model,
                                   n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, dropout=0.0, max_len=32,
                                   pad_id=pad_id, norm_first=norm_first)
        model = copy_from_torch(Transformer(config), ref)
    # 不走嵌套张量的快速路径：读者在 no_grad 下调用时不会看到 torch 的"原型功能"提示（结果一样）
    ref.encoder.enable_nested_tensor = ref.encoder.use_nested_tensor = False
    return model.double().eval(), ref.double().eval()


def _ids(gen: torch.Generator, batch: int, length: int, vocab: int, pad_id: int, pad_tail=()) -> torch.Tensor:
    """(B, L) 的随机编号，不含 pad_id（其余编号都可能出现，包括 0）；pad_tail[i] 是第 i 句右侧补的填充个数。"""
    real = [v for v in range(vocab) if v != pad_id]
    ids = torch.tensor(real)[torch.randint(0, len(real), (batch, length), generator=gen)]
    for i, n in enumerate(pad_tail):
        if n:
            ids[i, -n:] = pad_id
    return ids


def _torch_case(gen, seed, B, S, T, description, src_pad=(), tgt_pad=(), **model_kw) -> Case:
    model, ref = _model_pair(seed, **model_kw)
    pad_id = model.config.pad_id
    src = _ids(gen, B, S, model.config.src_vocab_size, pad_id, src_pad)
    tgt = _ids(gen, B, T, model.config.tgt_vocab_size, pad_id, tgt_pad)
    if pad_id != 0:
        src[0, 0] = tgt[0, 0] = 0                 # 0 是真实的词：把填充写死成 0 的实现在这里会算错
    return Case((model, ref, src, tgt), description)


def _cases_torch_logits() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(2017)
    return (
        _torch_case(gen, 0, 2, 7, 5, "(B, S, T) = (2, 7, 5)，没有填充，post-LN"),
        _torch_case(gen, 1, 2, 7, 5, "源句有填充（第 2 句后 3 个），目标句没有", src_pad=(0, 3)),
        _torch_case(gen, 2, 3, 6, 6, "目标句有填充（第 2、3 句后 2、4 个）：填充位置的 logits 也要一致",
                    tgt_pad=(0, 2, 4)),
        _torch_case(gen, 3, 2, 8, 6, "pre-LN，源句、目标句都有填充", src_pad=(2, 0), tgt_pad=(0, 3),
                    norm_first=True),
        _torch_case(gen, 4, 2, 6, 5, "pad_id = 3：这里 0 是真实的词，3 才是填充", src_pad=(0, 2), tgt_pad=(1, 0),
                    pad_id=3),
        _torch_case(gen, 5, 1, 4, 1, "B = 1、T = 1：目标句只有一个位置"),
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


def _generate_torch_logits(rng) -> tuple[Case, ...]:
    """隐藏用例：随机的尺寸与填充，post-LN 与 pre-LN，pad_id 不是 0 的一例。"""
    gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))

    def r(a, b):
        return int(rng.integers(a, b))

    def pads(B, L):
        return tuple(r(0, L) if i else 0 for i in range(B))            # 第 1 句不补，其余随机补（至少留 1 个真词）

    cases = []
    for k, (norm_first, pad_id) in enumerate(((False, 0), (True, 0), (False, r(1, 9)))):
        B, S, T = r(1, 4), r(2, 9), r(1, 8)
        heads = (1, 2, 4)[r(0, 3)]
        kind = ("post-LN", "pre-LN", "post-LN，pad_id 不是 0（0 是真实的词）")[k]
        cases.append(_torch_case(gen, r(0, 2 ** 31), B, S, T, f"随机的尺寸与填充，{kind}",
                                 src_pad=pads(B, S), tgt_pad=pads(B, T), norm_first=norm_first, pad_id=pad_id,
                                 n_heads=heads, d_model=2 * heads * r(2, 5),
                                 n_layers=r(1, 3), src_vocab=r(10, 20), tgt_vocab=r(10, 20)))
    return tuple(cases)


register("ch09.embed", Exercise(
    title="嵌入：ids (B, L) → 查表 × √d_model + 位置编码 PE[:L]，得到 (B, L, C)",
    reference=_embed_reference,
    cases=_cases_embed(),
    generate=_generate_embed,
))
register("ch09.torch_logits", Exercise(
    title="用 torch.nn.Transformer 的两个栈算出课程包模型的 logits（嵌入与输出层用课程包的，掩码按 torch 的约定）",
    reference=_torch_logits_reference,
    cases=_cases_torch_logits(),
    # 输入是两个模块：检查器扰动不到它们的参数，量不出 float32 舍入的移动量，由这里给出。
    # 读者若把模型换成 float32，两层的 Transformer 的 logits 差 1e-6 量级；错的写法差 0.01 以上。
    atol=1e-5,
    rtol=1e-4,
    generate=_generate_torch_logits,
))
