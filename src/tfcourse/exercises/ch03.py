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


def _torch_gen(rng) -> torch.Generator:
    return torch.Generator().manual_seed(int(rng.integers(2 ** 62)))


def _generate_masked_attention(rng) -> tuple[Case, ...]:
    """隐藏用例：掩码全为 True、因果、填充 (B, 1, S)、有整行被屏蔽、批量多头、T ≠ S 且 D_v ≠ D、很大的打分。"""
    gen = _torch_gen(rng)

    def r(*n):
        return int(rng.integers(*n))

    T, D = r(2, 7), r(1, 6)
    B, S = r(1, 4), r(2, 7)
    lengths = torch.tensor([S] + [r(1, S + 1) for _ in range(B - 1)])
    left = r(1, T)                                                     # 左侧填充的个数
    left_padded = attention.causal_mask(T) & (torch.arange(T) >= left)
    H = r(1, 4)
    batch_mask = (attention.padding_mask(torch.tensor([T] + [r(1, T + 1) for _ in range(B - 1)]), max_len=T)[:, None]
                  & attention.causal_mask(T))                          # (B, 1, T, T)
    T2, S2, Dv = r(1, 5), r(2, 8), r(1, 5)
    cross_mask = torch.rand(T2, S2, generator=gen) < 0.6
    cross_mask[0] = False                                              # 第一行一个键都不许看
    return (
        Case((_randn(gen, T, D), _randn(gen, T, D), _randn(gen, T, D), torch.ones(T, T, dtype=torch.bool)),
             "掩码全为 True（相当于不加掩码）"),
        Case((_randn(gen, T, D), _randn(gen, T, D), _randn(gen, T, D), attention.causal_mask(T)), "因果掩码 (T, T)"),
        Case((_randn(gen, B, S, D), _randn(gen, B, S, D), _randn(gen, B, S, D),
              attention.padding_mask(lengths, max_len=S)), "填充掩码 (B, 1, S)"),
        Case((_randn(gen, T, D), _randn(gen, T, D), _randn(gen, T, D), left_padded),
             "有整行都不许看（左填充 + 因果）：这些行的权重和输出都应为 0"),
        Case((_randn(gen, B, H, T, D), _randn(gen, B, H, T, D), _randn(gen, B, H, T, D), batch_mask),
             "批量多头 (B, H, T, D)，填充 + 因果掩码 (B, 1, T, S)"),
        Case((_randn(gen, T2, D + 1), _randn(gen, S2, D + 1), _randn(gen, S2, Dv), cross_mask),
             "查询与键的个数不同、值的维度与 D 不同，还有一行被整行屏蔽"),
        Case((_randn(gen, T, D) * 30, _randn(gen, T, D) * 30, _randn(gen, T, D), attention.causal_mask(T)),
             "很大的打分（朴素的 softmax 会溢出）"),
    )


def _generate_causal_mask(rng) -> tuple[Case, ...]:
    """隐藏用例：T = 1、较小的 T、较大的 T。"""
    return (Case((1,), "T = 1"), Case((int(rng.integers(2, 10)),), "较小的 T"),
            Case((int(rng.integers(10, 40)),), "较大的 T"))


def _generate_padding_mask(rng) -> tuple[Case, ...]:
    """隐藏用例：随机长度、没有填充、有长度为 0 的句子、一句一个词、max_len 比最长的句子还长。"""
    B, S = int(rng.integers(2, 6)), int(rng.integers(2, 9))
    lengths = torch.as_tensor(rng.integers(1, S + 1, size=B))
    with_zero = lengths.clone()
    with_zero[int(rng.integers(B))] = 0
    return (
        Case((lengths, S), "随机的长度"),
        Case((torch.full((B,), S), S), "长度都等于 max_len：没有填充"),
        Case((with_zero, S), "有一句长度为 0：整行都是填充"),
        Case((torch.tensor([1]), 1), "只有一句、一个词"),
        Case((lengths, S + int(rng.integers(1, 5))), "max_len 比最长的句子还长"),
    )


def _padding_mask_reference(lengths, max_len):
    return attention.padding_mask(lengths, max_len=max_len)


register("ch03.masked_attention", Exercise(
    title="实现带掩码的缩放点积注意力（True 表示可以看），返回 (输出, 权重)",
    reference=attention.scaled_dot_product_attention,
    cases=_cases_masked_attention(),
    generate=_generate_masked_attention,
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
    generate=_generate_causal_mask,
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
    generate=_generate_padding_mask,
))
