"""注意力游乐场：在平面上拖动查询向量，看打分 → softmax → 加权和跟着变。第 1 章引入。

Python 给出词、键、值和初始查询，并用 `tfcourse.attention.simple_attention` 算出参考答案；
浏览器在读者拖动时只做三次点积和一次 softmax（没有内核的静态网页上也能拖）。
"""
from __future__ import annotations

import numbers

import numpy as np
import traitlets as t

from .. import attention
from .._checks import as_float_array, finite_number
from ._base import CourseWidget, esm


def _points(value, name: str) -> list[list[float]]:
    arr = as_float_array(value, name, ndim=2)
    if arr.shape[1] != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} 应为 (N, 2) 的数组（每个词一个二维向量），实际形状为 {arr.shape}。")
    return arr.tolist()


class AttentionPlayground(CourseWidget):
    """拖动查询向量 q 的注意力演示（二维）：打分 sᵢ = q·kᵢ，权重 w = softmax(s)，输出 = Σ wᵢ vᵢ。

    keys：(N, 2) 键向量；tokens：N 个词；values：(N, 2) 值向量（缺省等于键）；
    query：初始查询 (x, y)；limit：查询的每个分量限制在 [−limit, limit]，拖动与方向键以 step 为一档。
    Python 里用 .scores、.weights、.output 读取当前查询下的结果，用 .set_query(x, y) 设置（越界会夹回范围）。
    """

    _esm = esm("attention_playground.js")

    tokens = t.List(t.Unicode()).tag(sync=True)
    # 不叫 keys / values：ipywidgets 的 Widget.keys 已是"要同步的属性名"列表
    key_vectors = t.List(t.List(t.Float())).tag(sync=True)     # (N, 2)
    value_vectors = t.List(t.List(t.Float())).tag(sync=True)   # (N, 2)
    query = t.List(t.Float(), default_value=[0.0, 0.0]).tag(sync=True)   # (2,)
    limit = t.Float(1.5).tag(sync=True)
    step = t.Float(0.05).tag(sync=True)
    title = t.Unicode("").tag(sync=True)
    query_label = t.Unicode("查询 q").tag(sync=True)

    def __init__(self, keys, tokens, values=None, *, query=(0.0, 1.0), limit: float = 1.5,
                 step: float = 0.05, title: str = "", query_label: str = "查询 q", **kwargs):
        k = _points(keys, "keys（键向量）")
        v = k if values is None else _points(values, "values（值向量）")
        tokens = [str(s) for s in tokens]
        if len(tokens) != len(k) or len(v) != len(k):
            raise ValueError(f"词、键、值的个数应相同：{len(tokens)} 个词、{len(k)} 个键、{len(v)} 个值。")
        limit = finite_number(limit, "limit")
        step = finite_number(step, "step")
        if limit <= 0 or step <= 0 or step > limit:
            raise ValueError(f"应满足 0 < step ≤ limit，实际 step = {step}、limit = {limit}。")
        super().__init__(tokens=tokens, key_vectors=k, value_vectors=v, limit=limit, step=step, title=str(title),
                         query_label=str(query_label), **kwargs)
        self.set_query(*self._pair(query))

    @staticmethod
    def _pair(query) -> tuple:
        try:
            x, y = query
        except (TypeError, ValueError):
            raise ValueError(f"query 应为两个数 (x, y)，实际得到 {query!r}。") from None
        return x, y

    @t.validate("query")
    def _clamp_query(self, proposal):
        value = proposal["value"]
        if len(value) != 2:
            raise ValueError(f"query 应为两个数 (x, y)，实际有 {len(value)} 个。")
        lim = self.limit
        return [float(min(lim, max(-lim, finite_number(c, "查询的分量")))) for c in value]

    def set_query(self, x, y) -> "AttentionPlayground":
        """把查询设为 (x, y)；每个分量夹回 [−limit, limit]。返回自身。"""
        for name, c in (("x", x), ("y", y)):
            if isinstance(c, bool) or not isinstance(c, numbers.Real):
                raise ValueError(f"查询的 {name} 分量应为实数，实际得到 {c!r}。")
        self.query = [float(x), float(y)]
        return self

    def _attend(self):
        return attention.simple_attention(query=np.array(self.query), keys=np.array(self.key_vectors),
                                          values=np.array(self.value_vectors))

    @property
    def scores(self) -> np.ndarray:
        """打分 sᵢ = q·kᵢ，(N,)。"""
        return self._attend()[2]

    @property
    def weights(self) -> np.ndarray:
        """注意力权重 softmax(s)，(N,)，和为 1。"""
        return self._attend()[1]

    @property
    def output(self) -> np.ndarray:
        """加权和 Σ wᵢ vᵢ，(2,)。"""
        return self._attend()[0]
