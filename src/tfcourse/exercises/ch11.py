"""第 11 章的练习：做一次 BPE 合并、找出下一次该合并的相邻对（带平局规则）。"""
from __future__ import annotations

from collections import Counter

from ..tokenize.bpe import _merge_word
from . import Case, Exercise, register


# ---------------------------------------------------------------- 练习 A：做一次合并

def _reference_merge(ids, pair, new_id):
    return _merge_word(list(ids), tuple(pair), new_id)


_MERGE_CASES = (
    Case(([1, 2, 3, 1, 2], (1, 2), 256), "两处不相邻的出现都要换掉"),
    Case(([5, 5, 5], (5, 5), 300), "重叠的对 5 5 5：从左往右，换成 [300, 5]"),
    Case(([5, 5, 5, 5], (5, 5), 300), "5 5 5 5 → 两个新 token"),
    Case(([7, 8, 9], (1, 2), 256), "没有这一对：原样返回"),
    Case(([3, 4], (3, 4), 258), "整句就是这一对"),
    Case(([4, 3, 4, 3, 4], (3, 4), 258), "最后一个元素也属于一对"),
    Case(([2, 1, 2, 1], (2, 1), 260), "最后一个元素属于最后一对"),
    Case(([9], (9, 9), 257), "只有一个 token"),
)


def _generate_merge(rng) -> tuple[Case, ...]:
    """隐藏用例：小字母表上的随机序列（出现多次、重叠、在两端），外加没有这一对的序列。"""
    cases = []
    for k in range(6):
        n = int(rng.integers(1, 16))
        ids = [int(x) for x in rng.integers(0, 3, size=n)]
        a, b = (int(x) for x in rng.integers(0, 3, size=2))
        cases.append(Case((ids, (a, b), 256 + k), f"小字母表上的随机序列 {k + 1}"))
    cases.append(Case(([0] * int(rng.integers(3, 9)), (0, 0), 300), "同一个 token 连续出现：重叠的对"))
    cases.append(Case(([10, 11, 12], (0, 1), 301), "没有这一对：原样返回"))
    return tuple(cases)


register("ch11.merge_pair", Exercise(
    title="做一次 BPE 合并：把相邻对 pair 从左到右换成 new_id",
    reference=_reference_merge,
    cases=_MERGE_CASES,
    generate=_generate_merge,
))


# ---------------------------------------------------------------- 练习 B：下一次该合并哪一对

def _reference_best_pair(words, freqs):
    counts: Counter = Counter()
    for w, f in zip(words, freqs):
        for p in zip(w, w[1:]):
            counts[p] += f
    return min(counts, key=lambda p: (-counts[p], p))


_BEST_CASES = (
    Case(([[1, 2, 3], [1, 2]], [1, 1]), "最常见的相邻对"),
    Case(([[1, 2], [3, 4]], [1, 5]), "块的频数要乘上去"),
    Case(([[3, 4], [1, 2]], [2, 2]), "平局：取编号对最小的 (1, 2)"),
    Case(([[1, 2], [3, 1, 2]], [1, 1]), "(1, 2) 出现两次"),
    Case(([[5, 6], [7, 8]], [3, 3]), "平局：(5, 6) 比 (7, 8) 小"),
    Case(([[1, 9], [9, 2], [2, 1]], [2, 2, 2]), "三对平局：(1, 9) 最小"),
    Case(([[3, 2], [2, 5], [2, 4]], [1, 1, 1]), "合并不跨越块：(2, 2) 不是一对"),
    Case(([[2, 1], [1, 2]], [3, 2]), "块与块之间没有相邻对"),
    Case(([[4, 4, 4], [2, 3], [2, 3]], [1, 1, 1]), "重叠的 4 4 4 算两次 (4, 4)"),
)


def _generate_best_pair(rng) -> tuple[Case, ...]:
    """隐藏用例：随机块与频数（小字母表，平局常见）。"""
    cases = []
    for k in range(8):
        n = int(rng.integers(1, 7))
        words = [[int(x) for x in rng.integers(0, 5, size=int(rng.integers(2, 7)))] for _ in range(n)]
        freqs = [int(x) for x in rng.integers(1, 4, size=n)]
        cases.append(Case((words, freqs), f"随机的块与频数 {k + 1}"))
    return tuple(cases)


register("ch11.best_pair", Exercise(
    title="数相邻对（乘以块的频数），返回出现最多的那一对（平局取编号对最小的）",
    reference=_reference_best_pair,
    cases=_BEST_CASES,
    generate=_generate_best_pair,
))
