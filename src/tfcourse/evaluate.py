"""评估（evaluation）：一个数字之外还要报它有多不确定。第 14 章引入，第 15、16 章也用。

- `bootstrap_ci(values)`：逐例数值（例如每条评论判对 = 1、判错 = 0）的均值的自助法（bootstrap）
  百分位区间：有放回地重抽 n 个样本 n_boot 次，取这些均值的 (1 − level)/2 与 (1 + level)/2 分位数；
- `bootstrap_metric(y_true, y_pred, metric)`：同样重抽样本，但每次算一个整体指标（例如 F1）；
- `accuracy`、`f1_score`、`confusion_matrix`：与 scikit-learn 的定义相同（测试里逐一对照）；
- `mean_std(values)`：几个种子的均值与样本标准差（ddof = 1）；
- `distinct_n(texts, n)`：生成文本的多样性：不同的 n 元组（字符）个数 / 全部 n 元组个数。

同一个种子给出同一个区间（numpy 的 Generator）。
"""
from __future__ import annotations

import numbers

import numpy as np

from ._checks import positive_int

__all__ = ["bootstrap_ci", "bootstrap_metric", "accuracy", "f1_score", "confusion_matrix", "mean_std",
           "distinct_n"]

_CHUNK = 1 << 22                     # 每次最多生成这么多个重抽下标（约 32 MB），大数据也不会一次占满内存


def _values(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} 应为一维的数值序列，无法转换：{exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} 应为一维的数值序列，实际形状为 {arr.shape}。")
    if arr.size == 0:
        raise ValueError(f"{name} 是空的：至少要有 1 个数。")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} 含有 NaN 或无穷大。")
    return arr


def _check_boot(n_boot, level, seed) -> tuple[int, float]:
    n_boot = positive_int(n_boot, "重抽次数 n_boot")
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"置信水平 level 应在 (0, 1) 之间（例如 0.95），实际得到 {level!r}。")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"种子 seed 应为整数，实际得到 {seed!r}。")
    return n_boot, float(level)


def _resamples(n: int, n_boot: int, seed: int):
    """依次给出重抽的下标块 (rows, n)，合起来共 n_boot 行；同一个种子给出同样的下标。"""
    rng = np.random.default_rng(int(seed))
    rows = max(1, _CHUNK // n)
    for start in range(0, n_boot, rows):
        yield rng.integers(0, n, size=(min(rows, n_boot - start), n))


def _interval(stats: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2
    low, high = np.quantile(stats, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_ci(values, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """均值的自助法百分位区间 (low, high)。values：逐例的数（例如判对 1、判错 0），一维、非空。"""
    x = _values(values, "values")
    n_boot, level = _check_boot(n_boot, level, seed)
    means = np.concatenate([x[idx].mean(axis=1) for idx in _resamples(x.size, n_boot, seed)])   # (n_boot,)
    return _interval(means, level)


def _labels(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if t.ndim != 1 or p.ndim != 1:
        raise ValueError(f"y_true、y_pred 应为一维的标签序列，实际形状为 {t.shape} 与 {p.shape}。")
    if t.shape != p.shape:
        raise ValueError(f"y_true 与 y_pred 的长度须相同（每个样本一个预测），实际为 {t.size} 与 {p.size}。")
    if t.size == 0:
        raise ValueError("y_true 是空的：至少要有 1 个样本。")
    return t, p


def bootstrap_metric(y_true, y_pred, metric, *, n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> tuple[float, float]:
    """整体指标的自助法百分位区间：重抽样本（成对地抽 y_true 与 y_pred），每次算 metric(y_true, y_pred)。

    与 bootstrap_ci 用同样的重抽下标：metric = accuracy 时两者给出同一个区间。
    """
    t, p = _labels(y_true, y_pred)
    if not callable(metric):
        raise ValueError(f"metric 应为函数 metric(y_true, y_pred) -> float，实际得到 {type(metric).__name__}。")
    n_boot, level = _check_boot(n_boot, level, seed)
    stats = np.array([metric(t[i], p[i]) for idx in _resamples(t.size, n_boot, seed) for i in idx], dtype=float)
    return _interval(stats, level)


def accuracy(y_true, y_pred) -> float:
    """准确率：预测等于真实标签的比例。"""
    t, p = _labels(y_true, y_pred)
    return float(np.mean(t == p))


def f1_score(y_true, y_pred, positive=1) -> float:
    """正类 positive 的 F1 = 2·TP / (2·TP + FP + FN)；既没有真的正类也没有预测的正类时为 0（与 scikit-learn 相同）。"""
    t, p = _labels(y_true, y_pred)
    tp = int(np.sum((t == positive) & (p == positive)))
    wrong = int(np.sum((t == positive) != (p == positive)))      # FP + FN
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + wrong)


def confusion_matrix(y_true, y_pred, n_classes: int = 2) -> np.ndarray:
    """混淆矩阵 (n_classes, n_classes) 的整数数组：第 i 行第 j 列 = 真实为 i、预测为 j 的样本数。

    标签应为 0…n_classes − 1 的整数。"""
    t, p = _labels(y_true, y_pred)
    n = positive_int(n_classes, "类别数 n_classes")
    for name, y in (("y_true", t), ("y_pred", p)):
        if y.dtype == bool:
            y = y.astype(int)
        if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= n:
            raise ValueError(f"{name} 应为 0…{n - 1} 的整数标签，实际 dtype {y.dtype}、"
                             f"取值范围 {y.min()}…{y.max()}。")
    counts = np.bincount(t.astype(np.int64) * n + p.astype(np.int64), minlength=n * n)
    return counts.reshape(n, n)


def mean_std(values) -> tuple[float, float]:
    """均值与样本标准差（ddof = 1，例如几个种子的准确率）；只有一个数时标准差记为 0.0。"""
    x = _values(values, "values")
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0


def distinct_n(texts, n: int = 2) -> float:
    """distinct-n：所有文本里不同的字符 n 元组个数 / n 元组总数（越接近 1 越不重复）。

    比文本还长的 n 不产生 n 元组；一个 n 元组都没有时返回 0.0。"""
    if isinstance(texts, str):
        raise ValueError("texts 应为字符串的列表，实际得到一个字符串；只有一条文本时请写成 [text]。")
    texts = list(texts)
    if not all(isinstance(s, str) for s in texts):
        raise ValueError(f"texts 里的每一项都应为字符串，实际类型有 {sorted({type(s).__name__ for s in texts})}。")
    n = positive_int(n, "n 元组的长度 n")
    grams = [s[i:i + n] for s in texts for i in range(len(s) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0
