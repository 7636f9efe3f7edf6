"""第 8 章的练习：解码器自注意力的掩码（因果 + 目标填充）；把目标序列右移成 tgt_in / tgt_out（教师强制）。"""
from __future__ import annotations

import numpy as np
import torch

from .. import attention
from . import Case, Exercise, register


def _decoder_self_mask_reference(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """tgt (B, T) → (B, T, T) 布尔掩码：因果掩码与目标填充掩码取"且"，True 表示可以看。"""
    T = tgt.shape[1]
    return attention.causal_mask(T, device=tgt.device)[None] & (tgt != pad_id)[:, None, :]   # (B, T, T)


def _shift_targets_reference(y: torch.Tensor, bos_id: int, eos_id: int, pad_id: int):
    """y (B, L) 右侧补 pad_id 的目标序列 → (tgt_in, tgt_out)，都是 (B, L + 1)。

    tgt_in = <bos> + y（其后补 pad）；tgt_out = y + <eos>（<eos> 紧跟在最后一个真实的词之后，其后补 pad）。
    """
    B = y.shape[0]
    lengths = (y != pad_id).sum(dim=1)                                  # (B,)：每句真实长度（右填充）
    tgt_in = torch.cat([torch.full((B, 1), bos_id, dtype=y.dtype), y], dim=1)
    tgt_out = torch.cat([y, torch.full((B, 1), pad_id, dtype=y.dtype)], dim=1)
    tgt_out[torch.arange(B), lengths] = eos_id
    return tgt_in, tgt_out


def _ids(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.int64)


def _random_ids(rng, lengths, S, pad_id, left=False) -> torch.Tensor:
    """右侧（或左侧）补 pad_id 的词编号 (B, S)；真实的词不等于 pad_id。"""
    ids = rng.integers(1, 20, size=(len(lengths), S))
    ids[ids == pad_id] = pad_id + 1
    for b, n in enumerate(lengths):
        if left:
            ids[b, : S - n] = pad_id
        else:
            ids[b, n:] = pad_id
    return torch.as_tensor(ids, dtype=torch.int64)


def _generate_decoder_self_mask(rng) -> tuple[Case, ...]:
    """隐藏用例：没有填充、右侧补 0、T = 1、pad_id 不是 0、左侧补 pad（有整行不许看）。"""
    B, T = int(rng.integers(2, 5)), int(rng.integers(2, 8))
    lengths = [T] + [int(x) for x in rng.integers(1, T + 1, size=B - 1)]
    pad = int(rng.integers(2, 9))
    return (
        Case((_random_ids(rng, [T], T, 0), 0), "一句、没有填充：就是因果掩码"),
        Case((_random_ids(rng, lengths, T, 0), 0), "多句、右侧补 pad = 0"),
        Case((_random_ids(rng, [1], 1, 0), 0), "T = 1"),
        Case((_random_ids(rng, lengths, T, pad), pad), "pad_id 不是 0"),
        Case((_random_ids(rng, [max(1, T - 2), T], T, 0, left=True), 0), "左侧补 pad：前几行一个键都不许看"),
    )


def _generate_shift_targets(rng) -> tuple[Case, ...]:
    """隐藏用例：没有填充、右侧补 pad、有一句是空的、L = 1、BOS/EOS/pad 的编号不是 1/2/0。"""
    B, L = int(rng.integers(2, 5)), int(rng.integers(2, 8))
    lengths = [int(x) for x in rng.integers(1, L + 1, size=B)]
    bos, eos, pad = (int(x) for x in rng.permutation(np.arange(20, 30))[:3])
    return (
        Case((_random_ids(rng, [L], L, 0), 1, 2, 0), "一句、没有填充"),
        Case((_random_ids(rng, lengths, L, 0), 1, 2, 0), "多句、右侧补 pad"),
        Case((_random_ids(rng, [0] + lengths[1:], L, 0), 1, 2, 0), "有一句是空的（全是 pad）"),
        Case((_random_ids(rng, [1], 1, 0), 1, 2, 0), "L = 1"),
        Case((_random_ids(rng, lengths, L, pad), bos, eos, pad), "BOS、EOS、pad 的编号不是 1、2、0"),
    )


register("ch08.decoder_self_mask", Exercise(
    title="生成解码器自注意力的掩码 (B, T, T)：因果掩码与目标填充掩码取“且”，True 表示可以看",
    reference=_decoder_self_mask_reference,
    cases=(
        Case((_ids([[1, 5, 6, 7]]), 0), "一句、没有填充：就是因果掩码"),
        Case((_ids([[1, 4, 5, 0, 0], [1, 6, 0, 0, 0], [1, 3, 4, 5, 6]]), 0), "三句、右侧补 pad = 0"),
        Case((_ids([[1]]), 0), "T = 1"),
        Case((_ids([[1, 7, 7, 3, 3], [1, 3, 3, 3, 3]]), 3), "pad_id = 3（不是 0）"),
        Case((_ids([[0, 0, 1, 4], [1, 4, 5, 6]]), 0), "左侧补 pad：第 1 句前两行一个键都不许看"),
    ),
    generate=_generate_decoder_self_mask,
))

register("ch08.shift_targets", Exercise(
    title="把右填充的目标序列 y 右移成 (tgt_in, tgt_out)：tgt_in = BOS + y，tgt_out = y + EOS",
    reference=_shift_targets_reference,
    cases=(
        Case((_ids([[7, 8, 9]]), 1, 2, 0), "一句、没有填充"),
        Case((_ids([[5, 6, 7, 0], [8, 0, 0, 0], [3, 4, 5, 6]]), 1, 2, 0),
             "三句、右侧补 pad：EOS 要紧跟在最后一个真实的词后面"),
        Case((_ids([[0, 0], [4, 0]]), 1, 2, 0), "有一句是空的（全是 pad）：tgt_out 的第一个就是 EOS"),
        Case((_ids([[9]]), 1, 2, 0), "L = 1"),
        Case((_ids([[3, 4, 12], [5, 12, 12]]), 10, 11, 12), "BOS、EOS、pad 的编号是 10、11、12"),
    ),
    generate=_generate_shift_targets,
))
