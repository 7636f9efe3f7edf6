"""合成任务：答案在 k 个词之前——用来比较不同结构记远处信息的能力。第 1 章引入。

第 4 章添了 `previous_and_first`：每个位置的答案同时取决于两个不同的位置，用来看多头注意力的分工。
"""
from __future__ import annotations

import torch

from .._checks import positive_int

__all__ = ["first_token_recall", "previous_and_first"]


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


def previous_and_first(n: int, length: int, vocab_size: int = 6, generator: torch.Generator | None = None):
    """生成 n 条长度为 length 的随机词序列；位置 t（t ≥ 1）的标签同时取决于**前一个词**和**第一个词**。

    标签把两者编成一个类别：y_t = x_{t−1} · vocab_size + x_0，共 vocab_size² 类（第 4 章：两种关系，两个头）。
    位置 0 没有"前一个词"，不出标签。词均匀随机，所以瞎猜的正确率是 1 / vocab_size²。
    返回 (x, y)：x 形状 (n, length) 的 int64；y 形状 (n, length − 1) 的 int64，y[:, t − 1] 是位置 t 的标签。
    """
    n = positive_int(n, "样本数 n")
    length = positive_int(length, "序列长度 length")
    vocab_size = positive_int(vocab_size, "词表大小 vocab_size")
    if length < 2:
        raise ValueError(f"序列长度 length 至少为 2（从位置 1 起才有前一个词），实际为 {length}。")
    if vocab_size < 2:
        raise ValueError(f"词表大小 vocab_size 至少为 2，实际为 {vocab_size}。")
    x = torch.randint(0, vocab_size, (n, length), generator=generator)   # (B, T)
    y = x[:, :-1] * vocab_size + x[:, :1]                                # 位置 1…T−1：(前一个词, 第一个词)
    return x, y
