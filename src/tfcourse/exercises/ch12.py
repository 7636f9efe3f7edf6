"""第 12 章的练习：给定随机数写出 BERT 的 80/10/10 掩码规则；只在真实 token 上求平均（mean pooling）。"""
from __future__ import annotations

import torch

from ..bert import mask_rule, mean_pool
from . import Case, Exercise, register

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4          # 与 WordPiece 词表的前几个特殊 token 同一个顺序
SPECIAL = (PAD, UNK, CLS, SEP, MASK)


# ---------------------------------------------------------------- 练习 A：80/10/10 掩码规则

def _mask_case(g: torch.Generator, B: int, T: int, V: int, p: float, lengths=None):
    """一批 [CLS] … [SEP] [PAD]… 的句子，以及三组随机数（u_choose、u_action、random_ids）。"""
    ids = torch.randint(5, V, (B, T), generator=g)
    lengths = [T] * B if lengths is None else list(lengths)
    for i, n in enumerate(lengths):
        ids[i, 0], ids[i, n - 1] = CLS, SEP
        ids[i, n:] = PAD
    u_choose = torch.rand(B, T, generator=g, dtype=torch.float64)
    u_action = torch.rand(B, T, generator=g, dtype=torch.float64)
    random_ids = torch.randint(5, V, (B, T), generator=g)
    return (ids, u_choose, u_action, random_ids, MASK, SPECIAL, p)


def _cases_mask() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(1212)
    edge = _mask_case(g, 1, 8, 30, 0.5)
    ids, u_c, _, rnd, *rest = edge
    # 阈值处：u_action 正好是 0.8、0.9（0.8 属于"随机替换"，0.9 属于"不变"）
    u_a = torch.tensor([[0.1, 0.8, 0.9, 0.85, 0.2, 0.95, 0.5, 0.3]], dtype=torch.float64)
    return (
        Case(_mask_case(g, 2, 12, 50, 0.15), "两句等长的句子，p = 0.15"),
        Case(_mask_case(g, 3, 16, 40, 0.5, lengths=(16, 9, 5)), "带填充的一批，p = 0.5：填充与 [CLS]/[SEP] 不选"),
        Case(_mask_case(g, 2, 10, 30, 1.0, lengths=(10, 6)), "p = 1：每个普通 token 都被选中"),
        Case((ids, torch.zeros_like(u_c), u_a, rnd, *rest), "u_action 落在 0.8、0.9 这两个分界点上"),
        Case(_mask_case(g, 4, 20, 200, 0.15, lengths=(20, 17, 3, 11)), "更大的一批"),
    )


def _generate_mask(rng) -> tuple[Case, ...]:
    """隐藏用例：等长、带填充、p = 1、较大的一批。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    B, T, V = int(rng.integers(2, 5)), int(rng.integers(6, 20)), int(rng.integers(20, 300))
    lengths = [int(rng.integers(2, T + 1)) for _ in range(B)]
    lengths[0] = T
    return (
        Case(_mask_case(g, B, T, V, float(rng.uniform(0.1, 0.3))), "等长的句子"),
        Case(_mask_case(g, B, T, V, float(rng.uniform(0.3, 0.7)), lengths=lengths), "带填充的一批"),
        Case(_mask_case(g, B, T, V, 1.0, lengths=lengths), "p = 1：每个普通 token 都被选中"),
        Case(_mask_case(g, 6, 32, V, 0.15, lengths=[32] + [int(rng.integers(2, 33)) for _ in range(5)]),
             "更大的一批"),
    )


def _reference_mask(ids, u_choose, u_action, random_ids, mask_id, special_ids, p):
    return mask_rule(ids, u_choose, u_action, random_ids, mask_id=mask_id, special_ids=special_ids, p=p)


register("ch12.mask_rule", Exercise(
    title="给定随机数，写出 BERT 的 80/10/10 掩码规则",
    reference=_reference_mask,
    cases=_cases_mask(),
    generate=_generate_mask,
))


# ---------------------------------------------------------------- 练习 B：只在真实 token 上求平均

def _pool_case(g: torch.Generator, lengths, C: int, scale: float = 1.0):
    B, T = len(lengths), max(lengths)
    hidden = scale * torch.randn(B, T, C, generator=g, dtype=torch.float64)
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]          # (B, T) 布尔
    return (hidden, mask)


def _cases_pool() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(384)
    hidden, mask = _pool_case(g, (5, 2, 7), 6)
    hidden[~mask] = 50.0                                   # 填充位置的隐藏状态很大：算进去就差得很远
    return (
        Case(_pool_case(g, (4, 4), 8), "没有填充：就是沿长度求平均"),
        Case(_pool_case(g, (6, 3, 1), 5), "带填充：只平均真实 token"),
        Case((hidden, mask), "填充位置的值很大（50）：不能混进平均里"),
        Case((hidden, mask.long()), "掩码是 0/1 整数而不是布尔值"),
    )


def _generate_pool(rng) -> tuple[Case, ...]:
    """隐藏用例：没有填充、带填充、填充位置值很大、0/1 整数掩码。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    C, B = int(rng.integers(2, 16)), int(rng.integers(2, 6))
    T = int(rng.integers(2, 12))
    lengths = [T] + [int(rng.integers(1, T + 1)) for _ in range(B - 1)]
    hidden, mask = _pool_case(g, lengths, C)
    loud = hidden.clone()
    loud[~mask] = float(rng.uniform(20, 100))
    return (
        Case(_pool_case(g, [T] * B, C), "没有填充"),
        Case((hidden, mask), "带填充"),
        Case((loud, mask), "填充位置的值很大"),
        Case((hidden, mask.long()), "0/1 整数掩码"),
    )


def _reference_pool(hidden, mask):
    return mean_pool(hidden, mask)


register("ch12.mean_pool", Exercise(
    title="只在真实 token 上求平均（mean pooling）",
    reference=_reference_pool,
    cases=_cases_pool(),
    generate=_generate_pool,
))
