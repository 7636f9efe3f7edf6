"""位置编码探索器：选一个位置、一对维度，看正弦编码的数值、波长，以及点积随距离的变化。第 5 章引入。"""
from __future__ import annotations

import math

import numpy as np
import traitlets as t

from .. import positional
from .._checks import positive_int
from ._base import CourseWidget, clamp, esm


class PositionalEncodingExplorer(CourseWidget):
    """正弦位置编码表 PE (max_len, d_model) 的可视化。

    整张编码表（行 = 位置，列 = 维度），点击即选中位置与维度对；所选维度对 (2i, 2i+1)
    随位置变化的正弦/余弦曲线；PE(p)·PE(p+k) 随偏移 k 的变化（页面窄时三者上下排列）。
    编码表由 `tfcourse.positional.sinusoidal_positional_encoding` 在 Python 里算好。
    """

    _esm = esm("pe_explorer.js")

    max_len = t.Int(1).tag(sync=True)
    d_model = t.Int(2).tag(sync=True)
    base = t.Float(10000.0).tag(sync=True)
    pe = t.List(t.Float()).tag(sync=True)                      # 扁平化的 (max_len, d_model)
    dots = t.List(t.Float()).tag(sync=True)                    # PE(p)·PE(p+k)，k = 0 … max_len−1（与 p 无关）
    position = t.Int(0).tag(sync=True)
    pair = t.Int(0).tag(sync=True)

    def __init__(self, max_len: int = 64, d_model: int = 64, *, position: int = 10, pair: int = 0,
                 base: float = 10000.0, **kwargs):
        max_len = positive_int(max_len, "max_len")
        table = positional.sinusoidal_positional_encoding(max_len, d_model, base).double()
        dots = (table[0:1] @ table.T)[0]                         # PE(0)·PE(k)：只依赖偏移 k
        super().__init__(
            max_len=max_len, d_model=int(d_model), base=float(base),
            pe=[round(float(v), 6) for v in table.flatten()],
            dots=[round(float(v), 6) for v in dots], **kwargs,
        )
        self.set(position=position, pair=pair)

    @t.validate("position")
    def _clamp_position(self, proposal):
        return clamp(proposal["value"], 0, self.max_len - 1)

    @t.validate("pair")
    def _clamp_pair(self, proposal):
        return clamp(proposal["value"], 0, self.d_model // 2 - 1)

    def set(self, position: int | None = None, pair: int | None = None):
        """选中位置 position 与维度对 pair（越界会夹回有效范围）。返回自身。"""
        with self.hold_sync():
            for name, value in (("position", position), ("pair", pair)):
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise ValueError(f"{name} 应为整数，实际得到 {value!r}。")
                setattr(self, name, int(value))
        return self

    def values(self) -> tuple[float, float]:
        """当前位置 p、维度对 i 上的 (PE[p, 2i], PE[p, 2i+1])。"""
        row = self.position * self.d_model + 2 * self.pair
        return self.pe[row], self.pe[row + 1]

    @property
    def wavelength(self) -> float:
        """维度对 i 的波长 2π · base^(2i/d_model)（走多少个位置转一整圈）。"""
        return 2 * math.pi * self.base ** (2 * self.pair / self.d_model)
