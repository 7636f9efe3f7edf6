"""RNN 记忆探索器：拖动 W_hh、W_xh 和序列长度 L，看开头的信号还剩多少。第 1 章引入。"""
from __future__ import annotations

import numpy as np
import traitlets as t

from .. import rnn
from .._checks import finite_number, positive_int
from ._base import CourseWidget, clamp, esm

DEFAULT_W_HH = tuple(np.round(np.arange(0.0, 1.5001, 0.05), 2).tolist())
DEFAULT_W_XH = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)


def format_state(value: float) -> str:
    """小部件显示隐藏状态的格式（与前端 JavaScript 的 formatState 一致）。"""
    if value == 0:
        return "0"
    if abs(value) >= 1e-3:
        return f"{value:.4f}"
    mantissa, exp = f"{value:.2e}".split("e")
    return f"{mantissa}e{int(exp)}"


def _nearest_index(values, target: float, name: str) -> int:
    target = finite_number(target, name)
    return int(np.argmin(np.abs(np.asarray(values) - target)))


class RNNMemoryExplorer(CourseWidget):
    """标量 RNN 吃进 [1, 0, 0, …] 后，第 t 步的隐藏状态 h_t 随 t 的衰减曲线。

    参数网格（W_hh × W_xh × 长度 1…max_len）由 `tfcourse.rnn.memory_curves` 预先算好，
    前端只查表；attention_alpha 画出注意力的对照线（开头位置的固定权重，与长度无关）。
    """

    _esm = esm("rnn_explorer.js")

    w_hh_values = t.List(t.Float()).tag(sync=True)
    w_xh_values = t.List(t.Float()).tag(sync=True)
    max_len = t.Int(1).tag(sync=True)
    curves = t.List(t.Float()).tag(sync=True)               # 扁平化的 (n_hh, n_xh, max_len)
    w_hh_index = t.Int(0).tag(sync=True)
    w_xh_index = t.Int(0).tag(sync=True)
    length = t.Int(1).tag(sync=True)
    attention_alpha = t.Float(0.6).tag(sync=True)

    def __init__(
        self,
        w_hh: float = 0.9,
        w_xh: float = 0.5,
        length: int = 20,
        *,
        w_hh_values=DEFAULT_W_HH,
        w_xh_values=DEFAULT_W_XH,
        max_len: int = 100,
        attention_alpha: float = 0.6,
        **kwargs,
    ):
        max_len = positive_int(max_len, "最大长度 max_len")
        alpha = finite_number(attention_alpha, "attention_alpha")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"attention_alpha 应在 [0, 1] 之间，实际为 {alpha}。")
        grid = rnn.memory_curves(w_hh_values, w_xh_values, max_len)   # (n_hh, n_xh, max_len)
        super().__init__(
            w_hh_values=[float(v) for v in w_hh_values],
            w_xh_values=[float(v) for v in w_xh_values],
            max_len=max_len,
            curves=[float(f"{v:.6g}") for v in grid.ravel()],
            attention_alpha=alpha,
            **kwargs,
        )
        self.set(w_hh=w_hh, w_xh=w_xh, length=length)

    # 前端或 Python 设置越界时一律夹回有效范围（小部件不会因此出错）
    @t.validate("w_hh_index")
    def _clamp_hh(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.w_hh_values) - 1, 0))

    @t.validate("w_xh_index")
    def _clamp_xh(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.w_xh_values) - 1, 0))

    @t.validate("length")
    def _clamp_length(self, proposal):
        return clamp(proposal["value"], 1, max(self.max_len, 1))

    def set(self, w_hh: float | None = None, w_xh: float | None = None, length: int | None = None):
        """把滑块移到最接近的网格取值；长度越界时夹到 [1, max_len]。返回自身，便于链式调用。"""
        with self.hold_sync():
            if w_hh is not None:
                self.w_hh_index = _nearest_index(self.w_hh_values, w_hh, "W_hh")
            if w_xh is not None:
                self.w_xh_index = _nearest_index(self.w_xh_values, w_xh, "W_xh")
            if length is not None:
                if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
                    raise ValueError(f"序列长度 length 应为整数，实际得到 {length!r}。")
                self.length = int(length)
        return self

    @property
    def w_hh(self) -> float:
        return self.w_hh_values[self.w_hh_index]

    @property
    def w_xh(self) -> float:
        return self.w_xh_values[self.w_xh_index]

    def curve(self) -> np.ndarray:
        """当前参数下 h_1 … h_max_len（与前端画的曲线相同）。"""
        n_xh = len(self.w_xh_values)
        start = (self.w_hh_index * n_xh + self.w_xh_index) * self.max_len
        return np.asarray(self.curves[start : start + self.max_len])

    @property
    def value(self) -> float:
        """当前设置下序列末尾的隐藏状态 h_L。"""
        return float(self.curve()[self.length - 1])
