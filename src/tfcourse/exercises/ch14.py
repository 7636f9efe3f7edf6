"""第 14 章的练习：从混淆矩阵算精确率、召回率与 F1；用给定的重抽样下标算自助法（bootstrap）区间。

混淆矩阵的约定同 `tfcourse.evaluate.confusion_matrix`：cm[i, j] = 真实类别为 i、预测为 j 的条数，
1 = 好评（正类）。自助法的下标矩阵 idx (n_boot, n) 由题目给出，答案因此是确定的。"""
from __future__ import annotations

import numpy as np

from . import Case, Exercise, register


def _reference_f1_from_confusion(cm):
    cm = np.asarray(cm, dtype=np.float64)
    tp, fp, fn = cm[1, 1], cm[0, 1], cm[1, 0]
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0      # 一条正类都没预测：约定为 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return float(precision), float(recall), float(f1)


def _cases_f1() -> tuple[Case, ...]:
    return (
        Case((np.array([[1500, 306], [168, 1498]]),), "一个真实大小的混淆矩阵（行 = 真实类别，列 = 预测）"),
        Case((np.array([[50, 40], [5, 905]]),), "误报多、漏报少：精确率和召回率差得远（行列弄反就会对调）"),
        Case((np.array([[30, 0], [0, 70]]),), "全部预测正确：三个数都是 1"),
        Case((np.array([[90, 0], [10, 0]]),), "一条好评也没预测：精确率、召回率、F1 都按约定是 0"),
        Case((np.array([[0, 12], [0, 8]]),), "全部预测成好评：召回率 1，精确率 = 好评的比例"),
    )


def _generate_f1(rng) -> tuple[Case, ...]:
    """隐藏用例：随机的混淆矩阵、误报与漏报很不对称、没有预测出正类、全对。"""
    def rand(lo, hi):
        return rng.integers(lo, hi, size=(2, 2))
    skew = rand(1, 50)
    skew[0, 1] = int(rng.integers(200, 400))
    none = rand(5, 100)
    none[:, 1] = 0
    perfect = np.diag(rng.integers(1, 100, size=2))
    return (Case((rand(5, 2000),), "随机的混淆矩阵"), Case((skew,), "误报远多于漏报"),
            Case((none,), "没有预测出好评"), Case((perfect,), "全部正确"))


register("ch14.f1_from_confusion", Exercise(
    title="从混淆矩阵算好评的精确率、召回率和 F1",
    reference=_reference_f1_from_confusion,
    cases=_cases_f1(),
    generate=_generate_f1,
))


def _reference_bootstrap_ci(correct, idx, level):
    correct = np.asarray(correct, dtype=np.float64)
    means = correct[np.asarray(idx)].mean(axis=1)           # 每次重抽样的准确率 (n_boot,)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def _bootstrap_case(rng, n, n_boot, p, level, text):
    correct = (rng.random(n) < p).astype(int)
    idx = rng.integers(0, n, size=(n_boot, n))
    return Case((correct, idx, level), text)


def _cases_bootstrap() -> tuple[Case, ...]:
    rng = np.random.default_rng(14)
    return (
        _bootstrap_case(rng, 300, 500, 0.86, 0.95, "300 条测试样本、准确率约 86%、500 次重抽样，95% 区间"),
        _bootstrap_case(rng, 200, 400, 0.7, 0.90, "90% 区间：两端各留 5%"),
        _bootstrap_case(rng, 50, 1000, 0.5, 0.95, "只有 50 条：区间很宽"),
        _bootstrap_case(rng, 120, 300, 0.95, 0.80, "准确率很高、80% 区间"),
    )


def _generate_bootstrap(rng) -> tuple[Case, ...]:
    """隐藏用例：不同的样本数、重抽样次数、准确率与置信水平。"""
    # 描述只说是哪一类用例（与种子无关），不透露随机抽到的水平
    levels = ((0.95, "置信水平 0.95"), (0.9, "置信水平 0.9"),
              (float(round(rng.uniform(0.6, 0.99), 2)), "随机抽取的置信水平"))
    return tuple(_bootstrap_case(rng, int(rng.integers(40, 400)), int(rng.integers(200, 800)),
                                 float(rng.uniform(0.5, 0.97)), level, text)
                 for level, text in levels)


register("ch14.bootstrap_ci", Exercise(
    title="自助法：用给定的重抽样下标算准确率的置信区间",
    reference=_reference_bootstrap_ci,
    cases=_cases_bootstrap(),
    generate=_generate_bootstrap,
))
