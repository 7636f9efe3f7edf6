"""第 7 章的练习：由一批词编号造填充掩码；给定子层，写出 post-LN 编码器层的前向计算。"""
from __future__ import annotations

import torch
from torch import nn

from .. import attention, layers
from . import Case, Exercise, register


def _padding_mask_reference(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    return attention.padding_mask(ids, pad_id=pad_id)             # (B, S) -> (B, 1, S)，True = 真实的词


def _cases_padding_mask() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(7)
    lengths = torch.tensor([9, 4, 1, 6])
    ids = torch.randint(1, 20, (4, 9), generator=gen)
    ids[torch.arange(9)[None, :] >= lengths[:, None]] = 0          # 右侧补 0
    return (
        Case((torch.tensor([[5, 3, 7, 0, 0], [2, 4, 0, 0, 0]]), 0), "两句话，右侧补 pad_id = 0"),
        Case((torch.tensor([[6, 2, 9, 4]]), 0), "B = 1，没有填充"),
        Case((ids, 0), "B = 4、S = 9，真实长度 9 / 4 / 1 / 6"),
        Case((torch.tensor([[0, 5, 3, 3], [1, 3, 3, 3]]), 3), "pad_id = 3：这里 0 是真实的词，3 才是填充"),
        Case((torch.tensor([[7]]), 0), "B = 1、S = 1"),
    )


def _randomize(module: nn.Module, gen: torch.Generator, scale: float) -> nn.Module:
    """用给定的随机数生成器重设所有参数（LayerNorm 的 γ、β 也随机：这样 norm1、norm2 用错了会被查出来）。"""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * scale)
    return module


def _sublayers(gen: torch.Generator, d_model: int, n_heads: int, d_ff: int):
    with torch.random.fork_rng(devices=[]):                        # 建模块会动全局随机数；用完原样恢复
        self_attn = attention.MultiHeadAttention(d_model, n_heads).double()
        ffn = layers.FeedForward(d_model, d_ff).double()
        norm1, norm2 = nn.LayerNorm(d_model).double(), nn.LayerNorm(d_model).double()
    _randomize(self_attn, gen, d_model ** -0.5)
    _randomize(ffn, gen, d_model ** -0.5)
    for norm in (norm1, norm2):
        with torch.no_grad():
            norm.weight.copy_(1.0 + 0.3 * torch.randn(d_model, generator=gen, dtype=torch.float64))
            norm.bias.copy_(0.3 * torch.randn(d_model, generator=gen, dtype=torch.float64))
    return self_attn, ffn, norm1, norm2


def _encoder_layer_reference(x, mask, self_attn, ffn, norm1, norm2):
    """把这四个子层装进课程包的 EncoderLayer（post-LN，关掉 dropout），算一次前向。"""
    with torch.random.fork_rng(devices=[]):
        layer = layers.EncoderLayer(x.shape[-1], self_attn.n_heads, ffn.d_ff, dropout=0.0, eps=norm1.eps)
    layer.self_attn, layer.ffn, layer.norm1, layer.norm2 = self_attn, ffn, norm1, norm2
    layer.eval()
    with torch.no_grad():
        return layer(x, mask)                                      # (B, S, C)


def _cases_encoder_layer() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(2017)

    def case(B, S, C, H, F, lengths, description):
        x = torch.randn(B, S, C, generator=gen, dtype=torch.float64)
        mask = None if lengths is None else attention.padding_mask(torch.tensor(lengths), max_len=S)
        return Case((x, mask, *_sublayers(gen, C, H, F)), description)

    return (
        case(2, 5, 8, 2, 16, None, "(B, S, C) = (2, 5, 8)，不加掩码"),
        case(2, 6, 8, 2, 16, [6, 3], "填充掩码 (B, 1, S)：第 2 句只有 3 个真实的词"),
        case(1, 4, 6, 3, 12, None, "B = 1，H = 3"),
        case(3, 7, 12, 4, 24, [7, 5, 2], "(B, S, C) = (3, 7, 12)，三句长度 7 / 5 / 2"),
        case(2, 1, 4, 1, 8, [1, 1], "S = 1：只有一个位置"),
    )


def _torch_gen(rng) -> torch.Generator:
    return torch.Generator().manual_seed(int(rng.integers(2 ** 62)))


def _right_padded(gen, lengths, S, pad_id, low=1, high=20):
    ids = torch.randint(low, high, (len(lengths), S), generator=gen)
    ids[ids == pad_id] = pad_id + 1
    ids[torch.arange(S)[None, :] >= torch.as_tensor(lengths)[:, None]] = pad_id
    return ids


def _generate_padding_mask(rng) -> tuple[Case, ...]:
    """隐藏用例：右侧补 0、没有填充、pad_id 不是 0（0 是真实的词）、B = 1 且 S = 1、有一句全是填充。"""
    gen = _torch_gen(rng)
    B, S = int(rng.integers(2, 6)), int(rng.integers(2, 10))
    lengths = [S] + [int(x) for x in rng.integers(1, S + 1, size=B - 1)]
    pad = int(rng.integers(2, 9))
    with_pad_id = _right_padded(gen, lengths, S, pad, low=0, high=12)
    empty = _right_padded(gen, [0] + lengths[1:], S, 0)
    return (
        Case((_right_padded(gen, lengths, S, 0), 0), "右侧补 pad_id = 0"),
        Case((_right_padded(gen, [S] * B, S, 0), 0), "没有填充"),
        Case((with_pad_id, pad), "pad_id 不是 0：0 是真实的词"),
        Case((torch.tensor([[int(rng.integers(1, 20))]]), 0), "B = 1、S = 1"),
        Case((empty, 0), "有一句全是填充"),
    )


def _generate_encoder_layer(rng) -> tuple[Case, ...]:
    """隐藏用例：不加掩码、填充掩码、B = 1、S = 1、随机形状。"""
    gen = _torch_gen(rng)

    def case(B, S, H, lengths, description):
        C = H * int(rng.integers(1, 5))
        x = torch.randn(B, S, C, generator=gen, dtype=torch.float64)
        mask = None if lengths is None else attention.padding_mask(torch.tensor(lengths), max_len=S)
        return Case((x, mask, *_sublayers(gen, C, H, int(rng.integers(2, 4)) * C)), description)

    def r(a, b):
        return int(rng.integers(a, b))

    B, S = r(2, 4), r(2, 7)
    return (
        case(B, S, r(1, 4), None, "不加掩码"),
        case(B, S, r(1, 4), [S] + [r(1, S + 1) for _ in range(B - 1)], "填充掩码 (B, 1, S)"),
        case(1, S, r(1, 4), None, "B = 1"),
        case(B, 1, r(1, 3), [1] * B, "S = 1：只有一个位置"),
        case(r(1, 4), r(2, 8), r(2, 5), None, "随机形状，多个头"),
    )


register("ch07.padding_mask", Exercise(
    title="由 (B, S) 的词编号造填充掩码 (B, 1, S)：True 表示真实的词",
    reference=_padding_mask_reference,
    cases=_cases_padding_mask(),
    generate=_generate_padding_mask,
))
register("ch07.encoder_layer_forward", Exercise(
    title="给定子层，写出 post-LN 编码器层的前向：h = LN(x + Attn(x))，再 LN(h + FFN(h))",
    reference=_encoder_layer_reference,
    cases=_cases_encoder_layer(),
    generate=_generate_encoder_layer,
))
