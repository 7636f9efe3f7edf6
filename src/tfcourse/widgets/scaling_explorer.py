"""缩放探索器：拖动 d_k、切换"除以 √d_k"，看点积的方差、softmax 的尖锐程度和梯度大小。第 3 章引入。"""
from __future__ import annotations

import numpy as np
import traitlets as t

from .. import attention
from ._base import CourseWidget, clamp, esm


class ScalingExplorer(CourseWidget):
    """为什么要除以 √d_k。

    所有数字由 `tfcourse.attention.scaling_statistics` 在 Python 里预先算好（每个 d_k、缩放与否），
    前端只查表画图，所以静态网页上也能拖动。
    """

    _esm = esm("scaling_explorer.js")

    d_values = t.List(t.Int()).tag(sync=True)
    var_dot = t.List(t.Float()).tag(sync=True)                 # (n_d,)
    max_weight = t.List(t.List(t.Float())).tag(sync=True)      # (2, n_d)：0 = 不缩放，1 = 缩放
    entropy = t.List(t.List(t.Float())).tag(sync=True)
    grad_norm = t.List(t.List(t.Float())).tag(sync=True)
    q_grad_median = t.List(t.List(t.Float())).tag(sync=True)
    q_grad_small = t.List(t.List(t.Float())).tag(sync=True)
    example = t.List(t.List(t.List(t.Float()))).tag(sync=True)  # (2, n_d, n_keys)
    d_index = t.Int(0).tag(sync=True)
    scaled = t.Bool(False).tag(sync=True)

    def __init__(self, d_k: int = 64, scaled: bool = False, *, stats: dict | None = None, **kwargs):
        stats = attention.scaling_statistics() if stats is None else stats
        needed = {"d_values", "var_dot", "max_weight", "entropy", "grad_norm", "q_grad_median", "q_grad_small", "example"}
        if not isinstance(stats, dict) or not needed <= set(stats):
            raise ValueError(f"stats 应为 attention.scaling_statistics() 返回的字典（含 {sorted(needed)}）。")
        r6 = lambda a: np.round(np.asarray(a, dtype=float), 6).tolist()   # noqa: E731
        super().__init__(
            d_values=[int(d) for d in stats["d_values"]], var_dot=r6(stats["var_dot"]),
            max_weight=r6(stats["max_weight"]), entropy=r6(stats["entropy"]),
            grad_norm=r6(stats["grad_norm"]), example=r6(stats["example"]),
            q_grad_median=r6(stats["q_grad_median"]), q_grad_small=r6(stats["q_grad_small"]),
            **kwargs,
        )
        self.set(d_k=d_k, scaled=scaled)

    @t.validate("d_index")
    def _clamp_d(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.d_values) - 1, 0))

    def set(self, d_k: int | None = None, scaled: bool | None = None):
        """把滑块移到最接近 d_k 的网格值（按对数距离），并设置是否缩放。返回自身。"""
        with self.hold_sync():
            if d_k is not None:
                if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k <= 0:
                    raise ValueError(f"d_k 应为正整数，实际得到 {d_k!r}。")
                self.d_index = int(np.argmin(np.abs(np.log2(self.d_values) - np.log2(d_k))))
            if scaled is not None:
                self.scaled = bool(scaled)
        return self

    @property
    def d_k(self) -> int:
        return self.d_values[self.d_index]

    def readout(self) -> dict:
        """当前设置下小部件显示的数字。"""
        i, j = int(self.scaled), self.d_index
        return {
            "d_k": self.d_k, "scaled": self.scaled, "var_dot": self.var_dot[j],
            "max_weight": self.max_weight[i][j], "entropy": self.entropy[i][j],
            "grad_norm": self.grad_norm[i][j], "example": list(self.example[i][j]),
            "q_grad_median": self.q_grad_median[i][j], "q_grad_small": self.q_grad_small[i][j],
        }
