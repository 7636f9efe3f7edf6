"""合成任务：答案在 k 个词之前——用来比较不同结构记远处信息的能力。第 1 章引入。"""
from __future__ import annotations

import torch

from .._checks import positive_int

__all__ = ["first_token_recall"]


def first_token_recall(n: int, length: int, vocab_size: int = 8, generator: torch.Generator | None = None):
    """生成 n 条长度为 length 的随机词序列，标签是**第一个词**（答案在 length − 1 个词之前）。

    词的编号是 0 … vocab_size−1，均匀随机，所以瞎猜的正确率是 1 / vocab_size。
    返回 (x, y)：x 形状 (n, length) 的 int64，y 形状 (n,) 的 int64（= x[:, 0]）。
    """
    n = positive_int(n, "样本数 n")
    length = positive_int(length, "序列长度 length")
    vocab_size = positive_int(vocab_size, "词表大小 vocab_size")
    if vocab_size < 2:
        raise ValueError(f"词表大小 vocab_size 至少为 2，实际为 {vocab_size}。")
    x = torch.randint(0, vocab_size, (n, length), generator=generator)   # (B, T)
    return x, x[:, 0].clone()
