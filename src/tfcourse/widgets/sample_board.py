"""样本看板：按控制 token 与微调方式并排看生成的评论，以及每位评委（分类器）的判决。第 15 章引入。

一切都在 Python 里算好：每个模型、每个控制 token 的 n 条样本，每位评委给每条样本的 P(好评) 与判决，
以及每格的控制成功率。前端只查表显示（拖动"第几条"），所以静态网页上也能用。
看板存下的文本都过一遍 `tfcourse.safety.mask_offensive`（侮辱性的词换成 ＊）；P(好评) 由调用方在模型
真正写出的文本上算好传进来，遮挡只影响显示。
"""
from __future__ import annotations

import numpy as np
import traitlets as t

from ..safety import is_clean, mask_offensive
from ._base import CourseWidget, clamp, esm

__all__ = ["SampleBoard"]


class SampleBoard(CourseWidget):
    """samples[m][c]：第 m 个模型、第 c 个控制 token 生成的 n 条文本（每格条数相同）；
    probs[j][m][c][i]：第 j 位评委给这条文本的 P(好评)，≥ 0.5 判为好评。
    models、controls、judges：行、列、评委的名字；wanted[c]：第 c 个控制 token 要求的标签（1 好评 / 0 差评）。
    初始视图：第 index 条（0 起）；index=None 时打开在每一格都没有侮辱性词语的第一条（`first_clean_index`）。
    文本显示前过一遍 mask_offensive。"""

    _esm = esm("sample_board.js")

    models = t.List(t.Unicode()).tag(sync=True)
    controls = t.List(t.Unicode()).tag(sync=True)
    judges = t.List(t.Unicode()).tag(sync=True)
    wanted = t.List(t.Int()).tag(sync=True)
    texts = t.List(t.List(t.List(t.Unicode()))).tag(sync=True)          # (M, C, n)
    probs = t.List(t.List(t.List(t.List(t.Float())))).tag(sync=True)    # (M, C, n, J)
    verdicts = t.List(t.List(t.List(t.List(t.Int())))).tag(sync=True)   # (M, C, n, J)：判成的标签
    success = t.List(t.List(t.List(t.Float()))).tag(sync=True)          # (M, C, J)：判为所要求标签的比例
    index = t.Int(0).tag(sync=True)

    def __init__(self, samples, probs, *, models, controls=("好评", "差评"), judges, wanted=(1, 0),
                 index: int | None = None, **kwargs):
        models, controls, judges, wanted = list(models), list(controls), list(judges), [int(w) for w in wanted]
        M, C, J = len(models), len(controls), len(judges)
        if not M or not C or not J or len(wanted) != C or any(w not in (0, 1) for w in wanted):
            raise ValueError(f"models、controls、judges 不能为空，wanted 应与 controls 一样长、只含 0 / 1；"
                             f"实际 {M} 个模型、{C} 个控制、{J} 位评委、wanted = {wanted}。")
        texts = [[list(map(str, cell)) for cell in row] for row in samples]
        if len(texts) != M or any(len(row) != C for row in texts):
            raise ValueError(f"samples 应为 {M} 行 × {C} 列（模型 × 控制 token），"
                             f"实际为 {len(texts)} 行 × {[len(r) for r in texts]} 列。")
        n = len(texts[0][0])
        if n == 0 or any(len(cell) != n for row in texts for cell in row):
            raise ValueError(f"每格的样本条数应相同且不为 0，实际为 {[[len(c) for c in r] for r in texts]}。")
        p = np.asarray(probs, dtype=float)
        if p.shape != (J, M, C, n) or not np.all((p >= 0) & (p <= 1)):
            raise ValueError(f"probs 应为 (评委, 模型, 控制, 条) = {(J, M, C, n)} 的概率数组（0～1），"
                             f"实际形状 {p.shape}。")
        p = np.moveaxis(p, 0, -1)                                           # (M, C, n, J)
        verdict = (p >= 0.5).astype(int)
        hit = verdict == np.asarray(wanted)[None, :, None, None]
        if index is None:
            index = self.first_clean_index(texts)
            index = 0 if index is None else index
        shown = [[[mask_offensive(x) for x in cell] for cell in row] for row in texts]
        super().__init__(models=models, controls=controls, judges=judges, wanted=wanted, texts=shown,
                         probs=np.round(p, 3).tolist(), verdicts=verdict.tolist(),
                         success=np.round(hit.mean(axis=2), 4).tolist(), **kwargs)
        self.index = index

    @staticmethod
    def first_clean_index(samples) -> int | None:
        """samples[m][c][i]：第一个让每一格的第 i 条都 is_clean 的 i；没有这样的 i 时返回 None。"""
        n = min(len(cell) for row in samples for cell in row)
        return next((i for i in range(n) if all(is_clean(str(cell[i])) for row in samples for cell in row)), None)

    @property
    def n_samples(self) -> int:
        return len(self.texts[0][0])

    @t.validate("index")
    def _clamp_index(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.texts[0][0]) - 1, 0) if self.texts else 0)

    def set(self, index=None) -> "SampleBoard":
        """显示第 index 条（0 起，超出范围时夹回）。返回自身。"""
        if index is not None:
            self.index = int(index)
        return self

    def readout(self) -> dict:
        """当前视图：每格 (模型, 控制) 的文本、每位评委的 P(好评) 与判决、是否判为所要求的标签。"""
        i = self.index
        cells = {}
        for m, name in enumerate(self.models):
            for c, ctrl in enumerate(self.controls):
                cells[name, ctrl] = {"text": self.texts[m][c][i], "probs": list(self.probs[m][c][i]),
                                     "verdicts": list(self.verdicts[m][c][i]),
                                     "hit": [v == self.wanted[c] for v in self.verdicts[m][c][i]]}
        return {"index": i, "cells": cells}
