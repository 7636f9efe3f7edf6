"""第 14 章练习的检查：参考实现通过；常见的错误写法（混淆矩阵行列弄反、F1 取算术平均、除以 0 得 NaN、
用准确率代替 F1；区间的分位数取错、不重抽样、用正态近似、把整体准确率当区间中心）被抓住。"""
import numpy as np
import pytest

from tfcourse.exercises import EXERCISES, check

F1, CI = "ch14.f1_from_confusion", "ch14.bootstrap_ci"


def _transposed(cm):                    # 行列弄反：精确率与召回率对调
    return EXERCISES[F1].reference(np.asarray(cm).T)


def _arithmetic_mean(cm):
    p, r, _ = EXERCISES[F1].reference(cm)
    return p, r, (p + r) / 2


def _nan_on_empty(cm):
    cm = np.asarray(cm, dtype=float)
    tp, fp, fn = cm[1, 1], cm[0, 1], cm[1, 0]
    with np.errstate(all="ignore"):
        p, r = tp / (tp + fp), tp / (tp + fn)
        return float(p), float(r), float(2 * p * r / (p + r))


def _accuracy_as_f1(cm):
    cm = np.asarray(cm, dtype=float)
    p, r, _ = EXERCISES[F1].reference(cm)
    return p, r, float(np.trace(cm) / cm.sum())


def _negative_class(cm):                # 算成了差评（类别 0）的三个数
    return EXERCISES[F1].reference(np.asarray(cm)[::-1, ::-1])


@pytest.mark.parametrize("wrong", [_transposed, _arithmetic_mean, _nan_on_empty, _accuracy_as_f1, _negative_class])
def test_typical_f1_mistakes_fail(wrong):
    assert not check(F1, wrong).passed
    assert not check(F1, wrong, cases=EXERCISES[F1].generate(np.random.default_rng(1))).passed


def _level_as_quantile(correct, idx, level):      # 取了 level 与 1 − level 分位数：95% 变成 90%
    means = np.asarray(correct, float)[idx].mean(1)
    lo, hi = np.quantile(means, [1 - level, level])
    return float(lo), float(hi)


def _no_resampling(correct, idx, level):
    a = (1 - level) / 2
    lo, hi = np.quantile(np.asarray(correct, float), [a, 1 - a])
    return float(lo), float(hi)


def _normal_approximation(correct, idx, level):
    c = np.asarray(correct, float)
    p, n = c.mean(), len(c)
    half = 1.96 * np.sqrt(p * (1 - p) / n)
    return float(p - half), float(p + half)


def _one_sided(correct, idx, level):
    means = np.asarray(correct, float)[idx].mean(1)
    lo, hi = np.quantile(means, [0.0, level])
    return float(lo), float(hi)


@pytest.mark.parametrize("wrong", [_level_as_quantile, _no_resampling, _normal_approximation, _one_sided])
def test_typical_interval_mistakes_fail(wrong):
    assert not check(CI, wrong).passed
    assert not check(CI, wrong, cases=EXERCISES[CI].generate(np.random.default_rng(2))).passed
