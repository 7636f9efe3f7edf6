"""附录 A 的练习：分组查询注意力的打分——H 个查询头、G 组键（已经转过 RoPE），每个查询头找到自己那组键。

my_gqa_scores(q (H, T, D), k (G, S, D)) → (H, T, S) 的打分 q·k / √D：第 h 个查询头用第 h // (H/G) 组的键。
（没有掩码，不做 softmax：练习只管"哪个头配哪组键"与缩放。）"""
from __future__ import annotations

import math

import torch

from . import Case, Exercise, register


def _reference_gqa_scores(q, k):
    H, G = q.shape[0], k.shape[0]
    k = k.repeat_interleave(H // G, dim=0)                       # (G, S, D) -> (H, S, D)：每组服务 H/G 个头
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])      # (H, T, S)


def _qk(H, G, T, S, D, g):
    return (torch.randn(H, T, D, generator=g, dtype=torch.float64),
            torch.randn(G, S, D, generator=g, dtype=torch.float64))


def _cases() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(17)
    return (
        Case(_qk(4, 4, 3, 5, 8, g), "G = H：每个头一组键（就是多头注意力）"),
        Case(_qk(4, 2, 3, 5, 8, g), "G = 2：头 0、1 用第 0 组，头 2、3 用第 1 组"),
        Case(_qk(4, 1, 2, 6, 8, g), "G = 1：所有头共用一组键（多查询注意力 MQA）"),
        Case(_qk(6, 3, 1, 4, 2, g), "6 个头、3 组、只有 1 个查询位置"),
        Case(_qk(8, 2, 3, 3, 16, g), "8 个头、2 组：每组服务连续的 4 个头（不是隔一个轮流）"),
    )


def _generate(rng) -> tuple[Case, ...]:
    """隐藏用例：头数、组数、长度、维数随机；总有 G = H、G = 1 与 1 < G < H 三种。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    out = []
    names = {"mha": "G = H：每个头一组键", "mqa": "G = 1：所有头共用一组键", "gqa": "1 < G < H：几个头共用一组键"}
    for groups in ("mha", "mqa", "gqa", "gqa"):
        G = int(rng.integers(2, 5))
        rep = int(rng.integers(2, 4))
        H = G * rep
        if groups == "mha":
            G = H
        elif groups == "mqa":
            G = 1
        T, S, D = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.choice([2, 4, 6, 8]))
        out.append(Case(_qk(H, G, T, S, D, g), names[groups]))
    return tuple(out)


register("ch17.gqa_scores", Exercise(
    title="分组查询注意力的打分：每个查询头用它那一组的键",
    reference=_reference_gqa_scores,
    cases=_cases(),
    generate=_generate,
))
