import time

import numpy as np
import pytest

from tfcourse.evaluate import (accuracy, bootstrap_ci, bootstrap_metric, confusion_matrix, distinct_n, f1_score,
                               mean_std)

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _bernoulli(p, n, seed):
    return (np.random.default_rng(seed).random(n) < p).astype(int)


def test_coverage_of_the_95_percent_interval():
    hits = 0
    for seed in range(200):
        x = _bernoulli(0.8, 500, seed=1000 + seed)
        low, high = bootstrap_ci(x, seed=seed)
        assert low <= x.mean() <= high
        hits += low <= 0.8 <= high
    assert 0.90 <= hits / 200 <= 0.99, hits


def test_width_shrinks_like_one_over_sqrt_n():
    widths = {}
    for n in (400, 1600):
        w = [np.subtract(*bootstrap_ci(_bernoulli(0.8, n, seed=s), seed=s)[::-1]) for s in range(10)]
        widths[n] = np.mean(w)
    assert 1.7 < widths[400] / widths[1600] < 2.3                   # n 翻 4 倍，宽度约减半
    normal = 2 * 1.96 * np.sqrt(0.8 * 0.2 / 1600)                   # 正态近似的宽度
    assert abs(widths[1600] / normal - 1) < 0.1


def test_deterministic_for_a_seed_and_level_orders_intervals():
    x = _bernoulli(0.85, 700, seed=3)
    assert bootstrap_ci(x, seed=7) == bootstrap_ci(list(x), seed=7)
    z = np.random.default_rng(0).normal(size=700)                   # 连续的值：0/1 的均值落在 k/700 的格子上，两个种子可能恰好相同
    assert bootstrap_ci(z, seed=7) == bootstrap_ci(z, seed=7)
    assert bootstrap_ci(z, seed=7) != bootstrap_ci(z, seed=8)
    lo90, hi90 = bootstrap_ci(x, level=0.90)
    lo99, hi99 = bootstrap_ci(x, level=0.99)
    assert lo99 < lo90 < x.mean() < hi90 < hi99
    assert bootstrap_ci([0.5], n_boot=10) == (0.5, 0.5)             # 只有一个数：区间缩成一点


def test_fast_for_a_test_set_of_3472():
    x = _bernoulli(0.86, 3472, seed=0)
    t0 = time.perf_counter()
    low, high = bootstrap_ci(x, n_boot=2000)
    assert time.perf_counter() - t0 < 10.0                          # 向量化：这台机器上约 0.1 秒，留足余量
    assert low < 0.86 < high and 0.015 < high - low < 0.03


def test_bootstrap_metric_matches_bootstrap_ci_for_accuracy():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 300)
    pred = np.where(rng.random(300) < 0.8, y, 1 - y)
    assert bootstrap_metric(y, pred, accuracy, n_boot=300, seed=4) == \
        bootstrap_ci(y == pred, n_boot=300, seed=4)                 # 同样的重抽下标
    low, high = bootstrap_metric(y, pred, f1_score, n_boot=300, seed=4)
    assert low < f1_score(y, pred) < high


@pytest.mark.parametrize("seed", range(4))
def test_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    pred = np.where(rng.random(200) < 0.7, y, rng.integers(0, 2, 200))
    assert accuracy(y, pred) == pytest.approx(sklearn_metrics.accuracy_score(y, pred), abs=1e-12)
    for positive in (0, 1):
        assert f1_score(y, pred, positive=positive) == pytest.approx(
            sklearn_metrics.f1_score(y, pred, pos_label=positive), abs=1e-12)
    assert np.array_equal(confusion_matrix(y, pred), sklearn_metrics.confusion_matrix(y, pred, labels=[0, 1]))
    y3, p3 = rng.integers(0, 3, 100), rng.integers(0, 3, 100)
    cm = confusion_matrix(y3, p3, n_classes=3)
    assert cm.dtype.kind == "i" and cm.sum() == 100
    assert np.array_equal(cm, sklearn_metrics.confusion_matrix(y3, p3, labels=[0, 1, 2]))


def test_edge_cases_match_sklearn():
    y, pred = np.zeros(5, int), np.zeros(5, int)                    # 没有正类
    assert f1_score(y, pred) == sklearn_metrics.f1_score(y, pred, zero_division=0.0) == 0.0
    assert confusion_matrix([1, 1], [1, 1]).tolist() == [[0, 0], [0, 2]]   # 行 = 真实类别
    assert confusion_matrix([True, False], [True, True]).tolist() == [[0, 1], [0, 1]]


def test_mean_std():
    m, s = mean_std([0.8, 0.82, 0.84])
    assert m == pytest.approx(0.82) and s == pytest.approx(0.02)    # 样本标准差（ddof = 1）
    assert mean_std([0.9]) == (0.9, 0.0)


def test_distinct_n():
    assert distinct_n(["好好好好"], n=2) == pytest.approx(1 / 3)      # 三个 "好好"
    assert distinct_n(["很好吃", "很好看"], n=2) == pytest.approx(3 / 4)
    assert distinct_n(["很好吃", "很好看"], n=1) == pytest.approx(4 / 6)
    assert distinct_n(["好"], n=2) == 0.0 and distinct_n([], n=2) == 0.0


def test_bad_inputs():
    for bad in ([], np.zeros((2, 2))):
        with pytest.raises(ValueError, match="空|一维"):
            bootstrap_ci(bad)
    with pytest.raises(ValueError, match="空"):
        bootstrap_ci([])
    for level in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"level.*\(0, 1\)"):
            bootstrap_ci([1, 0], level=level)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_ci([1, 0], n_boot=0)
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="seed"):
        bootstrap_ci([1, 0], seed=0.5)
    with pytest.raises(ValueError, match="长度须相同"):
        accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="空"):
        f1_score([], [])
    with pytest.raises(ValueError, match="metric"):
        bootstrap_metric([1], [1], "f1")
    with pytest.raises(ValueError, match="0…1"):
        confusion_matrix([0, 2], [0, 1])
    with pytest.raises(ValueError, match="空"):
        mean_std([])
    with pytest.raises(ValueError, match=r"\[text\]"):
        distinct_n("很好吃")
    with pytest.raises(ValueError, match="n"):
        distinct_n(["很好"], n=0)
