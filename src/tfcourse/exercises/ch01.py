"""第 1 章的练习：标量 RNN、数值稳定的 softmax。"""
from __future__ import annotations

import numpy as np

from .. import attention, rnn
from . import Case, Exercise, register


def _cases_rnn() -> tuple[Case, ...]:
    gen = np.random.default_rng(2017)
    cases = [
        Case(([1.0, 0.0, 0.0, 0.0, 0.0], 0.9, 0.5), "[1,0,0,0,0]，W_hh=0.9，W_xh=0.5"),
        Case(([1.0], 0.9, 0.5), "只有 1 个时间步"),
        Case(([0.0, 0.0, 1.0], 0.5, 2.0), "关键信息在最后"),
        Case(([1.0] + [0.0] * 49, 1.2, 0.5), "W_hh=1.2 > 1，长度 50"),
    ]
    for _ in range(3):
        seq = gen.normal(size=int(gen.integers(3, 12))).round(3).tolist()
        w_hh, w_xh = gen.uniform(-1.5, 1.5, size=2).round(2)
        cases.append(Case((seq, float(w_hh), float(w_xh)), f"随机序列，W_hh={w_hh}，W_xh={w_xh}"))
    return tuple(cases)


def _cases_softmax() -> tuple[Case, ...]:
    gen = np.random.default_rng(7)
    return (
        Case((np.array([0.0, 1.0, 0.8]),), "「我 love 猫」的打分 [0, 1, 0.8]"),
        Case((np.array([2.0, 2.0, 2.0, 2.0]),), "打分全相等"),
        Case((np.array([1000.0, 1001.0, 999.0]),), "很大的打分（朴素写法会溢出）"),
        Case((np.array([-1000.0, -1000.5]),), "很小的打分（朴素写法会得到 0/0）"),
        Case((gen.normal(size=(3, 5)),), "二维输入，按最后一维（每一行）归一化"),
    )


def _generate_rnn(rng: np.random.Generator) -> tuple[Case, ...]:
    """隐藏用例：每个种子都有同样几类（只有 1 步、|W_hh| < 1、W_hh > 1 的长序列、负的 W_hh、开头一个脉冲），数值随机。"""
    def seq(n):
        return rng.normal(size=n).round(3).tolist()

    return (
        Case((seq(1), float(rng.uniform(-1.5, 1.5)), float(rng.uniform(-2, 2))), "只有 1 个时间步"),
        Case((seq(int(rng.integers(5, 20))), float(rng.uniform(-0.9, 0.9)), float(rng.uniform(-2, 2))),
             "随机序列，|W_hh| < 1"),
        Case(([1.0] + [0.0] * int(rng.integers(30, 60)), float(rng.uniform(1.05, 1.5)), float(rng.uniform(0.2, 1))),
             "W_hh > 1 的长序列，只有开头一个脉冲"),
        Case((seq(int(rng.integers(3, 10))), float(rng.uniform(-1.5, -0.5)), float(rng.uniform(-2, 2))),
             "负的 W_hh"),
        Case((seq(int(rng.integers(10, 30))), float(rng.uniform(-1.5, 1.5)), float(rng.uniform(-3, 3))),
             "随机的长序列"),
    )


def _generate_softmax(rng: np.random.Generator) -> tuple[Case, ...]:
    """隐藏用例：一维、打分全相等、很大的打分、很小的打分、二维、三维（沿最后一维）。"""
    n = int(rng.integers(2, 9))
    return (
        Case((rng.normal(size=n),), "一维随机打分"),
        Case((np.full(n, float(rng.normal())),), "打分全相等"),
        Case((rng.normal(size=n) + float(rng.uniform(500, 5000)),), "很大的打分（朴素写法会溢出）"),
        Case((rng.normal(size=n) - float(rng.uniform(800, 5000)),), "很小的打分（朴素写法会得到 0/0）"),
        Case((rng.normal(size=(int(rng.integers(2, 6)), n)) * 5,), "二维输入，按每一行归一化"),
        Case((rng.normal(size=(2, int(rng.integers(2, 5)), n)),), "三维输入，按最后一维归一化"),
    )


def _rnn_reference(seq, w_hh, w_xh):
    return rnn.rnn_forward(seq, w_hh, w_xh)[-1]


register("ch01.rnn_final_state", Exercise(
    title="实现标量 RNN，返回最后一步的隐藏状态",
    reference=_rnn_reference,
    cases=_cases_rnn(),
    generate=_generate_rnn,
))
register("ch01.softmax", Exercise(
    title="实现数值稳定的 softmax（沿最后一维）",
    reference=attention.softmax,
    cases=_cases_softmax(),
    generate=_generate_softmax,
))
