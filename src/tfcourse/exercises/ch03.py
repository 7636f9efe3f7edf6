"""第 3 章的练习：带掩码的缩放点积注意力、因果掩码、填充掩码。"""
from __future__ import annotations

import torch

from .. import attention
from . import Case, Exercise, register


def _randn(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def _cases_masked_attention() -> tuple[Case, ...]:
    gen = torch.Generator().manual_seed(2017)
    # 左填充的句子 + 因果掩码：第 0 个位置只能看第 0 个键，而它是填充 → 这一行一个键都不许看
    left_padded = attention.causal_mask(4) & torch.tensor([False, True, True, True])
    batch_mask = (attention.padding_mask(torch.tensor([4, 2]), max_len=4)[:, None]   # (B, 1, 1, S)
                  & attention.causal_mask(4))                                          # -> (B, 1, T, S)
    cross_mask = torch.tensor([[True, False, True, True, False, True],
                               [False, True, False, False, True, False],
                               [True, True, True, True, True, True]])
    return (
        Case((_randn(gen, 4, 3), _randn(gen, 4, 3), _randn(gen, 4, 3), torch.ones(4, 4, dtype=torch.bool)),
             "掩码全为 True（相当于不加掩码），T = S = 4，D = 3"),
        Case((_randn(gen, 5, 4), _randn(gen, 5, 4), _randn(gen, 5, 4), attention.causal_mask(5)),
             "因果掩码 (5, 5)"),
        Case((_randn(gen, 2, 5, 4), _randn(gen, 2, 5, 4), _randn(gen, 2, 5, 4),
              attention.padding_mask(torch.tensor([5, 3]), max_len=5)),
             "填充掩码 (B, 1, S)：第 2 句后两个位置是填充"),
        Case((_randn(gen, 4, 3), _randn(gen, 4, 3), _randn(gen, 4, 3), left_padded),
             "有一整行都不许看（左填充 + 因果）：这一行的权重和输出都应为 0，不能是 NaN"),
        Case((_randn(gen, 2, 3, 4, 5), _randn(gen, 2, 3, 4, 5), _randn(gen, 2, 3, 4, 5), batch_mask),
             "批量多头 (B, H, T, D) = (2, 3, 4, 5)，填充 + 因果掩码 (B, 1, T, S)"),
        Case((_randn(gen, 3, 4), _randn(gen, 6, 4), _randn(gen, 6, 2), cross_mask),
             "T = 3 个查询、S = 6 个键，值的维度 D_v = 2 与 D = 4 不同"),
    )


def _padding_mask_reference(lengths, max_len):
    return attention.padding_mask(lengths, max_len=max_len)


register("ch03.masked_attention", Exercise(
    title="实现带掩码的缩放点积注意力（True 表示可以看），返回 (输出, 权重)",
    reference=attention.scaled_dot_product_attention,
    cases=_cases_masked_attention(),
))
register("ch03.causal_mask", Exercise(
    title="实现因果掩码 (T, T)：位置 t 只能看 0…t",
    reference=attention.causal_mask,
    cases=(
        Case((1,), "T = 1"),
        Case((2,), "T = 2"),
        Case((4,), "T = 4"),
        Case((7,), "T = 7"),
    ),
))
register("ch03.padding_mask", Exercise(
    title="由每句的长度生成填充掩码 (B, 1, S)：真实的词为 True",
    reference=_padding_mask_reference,
    cases=(
        Case((torch.tensor([3, 1, 4]), 5), "三句话，长度 3、1、4，补到 5"),
        Case((torch.tensor([4, 4]), 4), "长度正好等于 max_len：没有填充"),
        Case((torch.tensor([0, 2]), 3), "有一句长度为 0：整行都是填充"),
        Case((torch.tensor([1]), 1), "只有一句、一个词"),
    ),
))
