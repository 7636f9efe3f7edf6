"""会自己检查的练习。第 1 章引入；每章的练习放在本包的 chNN.py 里，用 register() 登记。

用法：check("ch01.softmax", 你的函数) —— 用隐藏用例逐个比对参考实现，
用中文告诉你对不对；不对时指出是哪个用例、期望什么、你给了什么。
"""
from __future__ import annotations

import copy
import html
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


__all__ = ["check", "register", "Case", "CheckResult", "Exercise", "EXERCISES"]

EXERCISES: dict = {}   # 编号 → Exercise；由各章的 chNN.py 在导入时登记


@dataclass(frozen=True)
class Case:
    """一个隐藏用例：位置参数、给读者看的说明。"""

    args: tuple
    description: str


@dataclass(frozen=True)
class Exercise:
    """一道练习：题目、参考实现和隐藏用例。"""

    title: str
    reference: Callable
    cases: tuple[Case, ...]
    atol: float = 1e-6
    rtol: float = 1e-5      # 相对误差：大数值的结果用 float32 算也能通过


@dataclass
class CheckResult:
    """check() 的结果：passed 为 True 表示全部隐藏用例通过。"""

    exercise_id: str
    title: str
    passed: bool
    n_cases: int
    n_passed: int
    messages: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = (
            f"✅ 练习 {self.exercise_id}（{self.title}）：{self.n_passed}/{self.n_cases} 个隐藏用例全部通过。"
            if self.passed
            else f"❌ 练习 {self.exercise_id}（{self.title}）：通过 {self.n_passed}/{self.n_cases} 个隐藏用例。"
        )
        return "\n".join([head, *self.messages])

    def __repr__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        lines = "<br>".join(html.escape(m) for m in self.summary().split("\n"))
        return (
            f'<div class="tfc-check" role="status" style="border-left:4px solid {colour};'
            f'padding:0.4em 0.8em">{lines}</div>'
        )


def _describe(value) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    return f"形状 {arr.shape} 的数组 {np.array2string(arr, precision=4, threshold=8)}"


def _plain(value):
    """torch 张量（可能带梯度）转成 numpy，其余原样返回。"""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        return value.detach().cpu().numpy()
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return value


def _compare(expected, got, atol: float, rtol: float = 0.0) -> str | None:
    """相同则返回 None，否则返回一句中文说明差在哪里。"""
    if got is None:
        return "你的函数返回了 None —— 是不是忘了写 return？"
    expected, got = _plain(expected), _plain(got)
    if isinstance(expected, tuple):                      # 返回多个结果的练习（如 (输出, 权重)）：逐个比
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"应返回 {len(expected)} 个结果组成的元组，你返回的是 {type(got).__name__}。"
        for n, (e, g) in enumerate(zip(expected, got), start=1):
            problem = _compare(e, g, atol, rtol)
            if problem is not None:
                return f"第 {n} 个返回值：{problem}"
        return None
    if np.asarray(expected).dtype == np.bool_ and np.asarray(got).dtype != np.bool_:
        return f"应返回布尔值（True/False）的数组或张量，你返回的 dtype 是 {np.asarray(got).dtype}。"
    try:
        got_arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return f"你的函数返回了 {type(got).__name__}，无法当作数值比较。"
    exp_arr = np.asarray(expected, dtype=np.float64)
    if got_arr.shape != exp_arr.shape:
        return f"形状不对：期望 {exp_arr.shape}，你返回的是 {got_arr.shape}。"
    if not np.all(np.isfinite(got_arr)):
        return f"结果里出现了 NaN 或无穷大：{_describe(got_arr)}。是不是数值溢出了，或者出现了 0/0（例如一整行都被掩码屏蔽）？"
    err = np.abs(got_arr - exp_arr)
    diff = float(err.max()) if exp_arr.size else 0.0
    if np.any(err > atol + rtol * np.abs(exp_arr)):
        return f"数值不对：期望 {_describe(exp_arr)}，你的结果 {_describe(got_arr)}（最大差 {diff:.3g}）。"
    return None


def check(exercise_id: str, fn: Callable) -> CheckResult:
    """用隐藏用例检查读者写的函数 fn，返回 CheckResult（在笔记本里会显示成一段中文结论）。"""
    if exercise_id not in EXERCISES:
        known = "、".join(sorted(EXERCISES))
        raise ValueError(f"没有编号为 {exercise_id!r} 的练习。现有练习：{known}。")
    if not callable(fn):
        raise ValueError(f"check 的第二个参数应是你写的函数，实际得到 {type(fn).__name__}。")
    ex = EXERCISES[exercise_id]
    messages: list[str] = []
    n_passed = 0
    for i, case in enumerate(ex.cases, start=1):
        expected = ex.reference(*copy.deepcopy(case.args))
        try:
            got = fn(*copy.deepcopy(case.args))          # 副本：读者的函数原地修改输入也不会弄坏隐藏用例
        except NotImplementedError:
            messages.append(f"用例 {i}（{case.description}）：函数还没有实现（NotImplementedError）。")
            continue
        except Exception as exc:  # 读者代码里的任何错误都要变成一句能看懂的话
            messages.append(f"用例 {i}（{case.description}）：你的函数抛出了 {type(exc).__name__}：{exc}")
            continue
        problem = _compare(expected, got, ex.atol, ex.rtol)
        if problem is None:
            n_passed += 1
        else:
            messages.append(f"用例 {i}（{case.description}）：{problem}")
    return CheckResult(exercise_id, ex.title, n_passed == len(ex.cases), len(ex.cases), n_passed, messages)


def register(exercise_id: str, exercise: Exercise) -> None:
    """登记一道练习；编号形如 "ch03.causal_mask"，不能重复。"""
    if exercise_id in EXERCISES:
        raise ValueError(f"练习编号 {exercise_id!r} 已经登记过了。")
    EXERCISES[exercise_id] = exercise


from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10  # noqa: E402,F401  各章登记自己的练习
