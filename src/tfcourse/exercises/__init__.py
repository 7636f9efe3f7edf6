"""会自己检查的练习。第 1 章引入；每章的练习放在本包的 chNN.py 里，用 register() 登记。

用法：check("ch01.softmax", 你的函数) —— 用隐藏用例逐个比对参考实现，
用中文告诉你对不对；不对时指出是哪个用例、期望什么、你给了什么。

容差从数值本身推出来，而不是调到某台机器能过为止：读者的 torch 代码默认用 float32，
一个正确的 float32 答案在任何 CPU 上都必须通过。对每个用例，检查器把输入里的浮点数按
float32 舍入的量级（相对 16·2⁻²⁴）随机扰动几次、用 float64 重算参考答案，量出"float32 舍入能让
这个结果移动多少"，乘上安全系数 FLOAT32_SPREAD，加在 atol + rtol·|期望| 之上；
移动量在 float64 里用固定种子算出，所以每台机器上的容差都一样。输入都是整数的练习（如位置编码），
float32 舍入来自中间结果，由该题自己的 atol 按中间量的大小给出。错误的写法（除错了 √d、
softmax 取错了轴…）差的是 0.1 的量级，远在这个容差之外。
"""
from __future__ import annotations

import copy
import importlib
import pkgutil
import html
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


__all__ = ["check", "register", "float32_spread", "allowed_error", "Case", "CheckResult", "Exercise", "EXERCISES"]

class _Registry(dict):
    """编号 → Exercise。各章的 chNN.py 在导入时登记；用到哪一章才导入哪一章（第 1 章的读者不必装第 12 章的依赖），
    遍历时导入全部。"""

    def _load(self, exercise_id) -> None:
        chapter = str(exercise_id).split(".")[0]
        if chapter.startswith("ch") and chapter[2:].isdigit():
            try:
                importlib.import_module(f"{__name__}.{chapter}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{chapter}":
                    raise

    def load_all(self) -> "_Registry":
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if info.name.startswith("ch") and info.name[2:].isdigit():
                importlib.import_module(f"{__name__}.{info.name}")
        return self

    def __missing__(self, exercise_id):
        self._load(exercise_id)
        if dict.__contains__(self, exercise_id):
            return dict.__getitem__(self, exercise_id)
        raise KeyError(exercise_id)

    def __contains__(self, exercise_id) -> bool:
        self._load(exercise_id)
        return dict.__contains__(self, exercise_id)

    def __iter__(self):
        return dict.__iter__(self.load_all())

    def __len__(self) -> int:
        return dict.__len__(self.load_all())

    def keys(self):
        return dict.keys(self.load_all())

    def values(self):
        return dict.values(self.load_all())

    def items(self):
        return dict.items(self.load_all())


EXERCISES = _Registry()


@dataclass(frozen=True)
class Case:
    """一个隐藏用例：位置参数、给读者看的说明。"""

    args: tuple
    description: str


@dataclass(frozen=True)
class Exercise:
    """一道练习：题目、参考实现、公开用例，以及（可选）按随机数生成器造新用例的 generate(rng)。

    atol、rtol 是在"float32 舍入能移动多少"之外再允许的误差（见模块说明）。
    """

    title: str
    reference: Callable
    cases: tuple[Case, ...]
    atol: float = 1e-6
    rtol: float = 1e-5
    generate: Callable | None = None      # generate(np.random.Generator) -> tuple[Case, ...]


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


FLOAT32_EPS = 2.0 ** -24          # float32 的单位舍入
INPUT_ROUNDING = 16 * FLOAT32_EPS  # 扰动输入的相对幅度：float32 舍入输入与中间结果的量级
FLOAT32_SPREAD = 4.0               # 量出的移动量再乘的安全系数
N_DRAWS = 4                        # 扰动几次


def _is_float_array(value) -> bool:
    if hasattr(value, "is_floating_point") and hasattr(value, "detach"):
        return bool(value.is_floating_point())
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"   # Python 的 float 是超参数，不扰动


def _perturb(value, rng: np.random.Generator):
    """把 value 里的浮点数组（numpy、torch）按相对 INPUT_ROUNDING 随机扰动；其余原样返回。"""
    if isinstance(value, (tuple, list)):
        return type(value)(_perturb(v, rng) for v in value)
    if not _is_float_array(value):
        return value
    shape = tuple(getattr(value, "shape", ()))
    factor = 1.0 + rng.uniform(-INPUT_ROUNDING, INPUT_ROUNDING, size=shape)
    if hasattr(value, "detach"):
        import torch
        return value * torch.as_tensor(factor, dtype=value.dtype)
    return value * factor


def _spread(expected, moved):
    """逐元素 |moved − expected|，结构与 expected 相同；整数、布尔结果的移动量记为 0。"""
    if isinstance(expected, tuple):
        return tuple(_spread(e, m) for e, m in zip(expected, moved))
    e = np.asarray(expected)
    if e.dtype.kind not in "fc":
        return np.zeros(e.shape)
    try:
        m = np.asarray(moved, dtype=np.float64)
    except (TypeError, ValueError):
        return np.zeros(e.shape)
    if m.shape != e.shape:
        return np.zeros(e.shape)
    with np.errstate(invalid="ignore"):
        d = np.abs(m - e.astype(np.float64))
    return np.where(np.isfinite(d), d, 0.0)


def _maximum(a, b):
    if isinstance(a, tuple):
        return tuple(_maximum(x, y) for x, y in zip(a, b))
    return np.maximum(a, b)


def float32_spread(reference: Callable, args: tuple, expected, seed: int = 0):
    """float32 舍入能让参考答案移动多少：扰动输入 N_DRAWS 次、用参考实现重算，取逐元素最大移动量。"""
    expected = _plain(expected)
    if not _has_float(args):
        return _spread(expected, expected)
    rng = np.random.default_rng(seed)
    spread = None
    for _ in range(N_DRAWS):
        moved = _plain(reference(*_perturb(copy.deepcopy(args), rng)))
        d = _spread(expected, moved)
        spread = d if spread is None else _maximum(spread, d)
    return spread


def _has_float(args) -> bool:
    if isinstance(args, (tuple, list)):
        return any(_has_float(a) for a in args)
    return _is_float_array(args)


def allowed_error(expected, atol: float, rtol: float, spread=None) -> np.ndarray:
    """逐元素允许的误差：atol + rtol·|期望| + 安全系数 × float32 舍入量出的移动量。"""
    exp_arr = np.asarray(_plain(expected), dtype=np.float64)
    allowed = atol + rtol * np.abs(exp_arr)
    if spread is not None and np.shape(spread) == exp_arr.shape:
        allowed = allowed + FLOAT32_SPREAD * spread
    return allowed


def _compare(expected, got, atol: float, rtol: float = 0.0, spread=None) -> str | None:
    """相同则返回 None，否则返回一句中文说明差在哪里。spread：float32_spread 量出的逐元素移动量。"""
    if got is None:
        return "你的函数返回了 None —— 是不是忘了写 return？"
    expected, got = _plain(expected), _plain(got)
    if isinstance(expected, tuple):                      # 返回多个结果的练习（如 (输出, 权重)）：逐个比
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"应返回 {len(expected)} 个结果组成的元组，你返回的是 {type(got).__name__}。"
        spreads = spread if isinstance(spread, tuple) else (None,) * len(expected)
        for n, (e, g, sp) in enumerate(zip(expected, got, spreads), start=1):
            problem = _compare(e, g, atol, rtol, sp)
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
    allowed = allowed_error(expected, atol, rtol, spread)
    if np.any(err > allowed):
        return f"数值不对：期望 {_describe(exp_arr)}，你的结果 {_describe(got_arr)}（最大差 {diff:.3g}）。"
    return None


def check(exercise_id: str, fn: Callable, *, cases: tuple[Case, ...] | None = None) -> CheckResult:
    """用隐藏用例检查读者写的函数 fn，返回 CheckResult（在笔记本里会显示成一段中文结论）。

    cases：换一组用例（例如教师判分时由 Exercise.generate 造的）；默认用本题的公开用例。
    """
    if exercise_id not in EXERCISES:
        known = "、".join(sorted(EXERCISES))
        raise ValueError(f"没有编号为 {exercise_id!r} 的练习。现有练习：{known}。")
    if not callable(fn):
        raise ValueError(f"check 的第二个参数应是你写的函数，实际得到 {type(fn).__name__}。")
    ex = EXERCISES[exercise_id]
    messages: list[str] = []
    n_passed = 0
    cases = ex.cases if cases is None else tuple(cases)
    for i, case in enumerate(cases, start=1):
        expected = ex.reference(*copy.deepcopy(case.args))
        try:
            got = fn(*copy.deepcopy(case.args))          # 副本：读者的函数原地修改输入也不会弄坏隐藏用例
        except NotImplementedError:
            messages.append(f"用例 {i}（{case.description}）：函数还没有实现（NotImplementedError）。")
            continue
        except Exception as exc:  # 读者代码里的任何错误都要变成一句能看懂的话
            messages.append(f"用例 {i}（{case.description}）：你的函数抛出了 {type(exc).__name__}：{exc}")
            continue
        spread = float32_spread(ex.reference, case.args, expected, seed=i)
        problem = _compare(expected, got, ex.atol, ex.rtol, spread)
        if problem is None:
            n_passed += 1
        else:
            messages.append(f"用例 {i}（{case.description}）：{problem}")
    return CheckResult(exercise_id, ex.title, n_passed == len(cases), len(cases), n_passed, messages)


def register(exercise_id: str, exercise: Exercise) -> None:
    """登记一道练习；编号形如 "ch03.causal_mask"，不能重复。"""
    if dict.__contains__(EXERCISES, exercise_id):
        raise ValueError(f"练习编号 {exercise_id!r} 已经登记过了。")
    EXERCISES[exercise_id] = exercise
