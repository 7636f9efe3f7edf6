"""可点击的注意力热力图：行是查询（query），列是键（key）。第 1 章引入，之后各章复用。"""
from __future__ import annotations

import numpy as np
import traitlets as t

from ._base import CourseWidget, clamp, esm


def _to_numpy(weights) -> np.ndarray:
    if hasattr(weights, "detach"):                            # torch.Tensor
        weights = weights.detach().cpu().numpy()
    try:
        return np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"weights 应为数值数组，无法转换：{exc}") from None


def _to_numpy_bool(mask) -> np.ndarray:
    if hasattr(mask, "detach"):
        mask = mask.detach().cpu().numpy()
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise ValueError(f"mask 应为布尔数组（True 表示可以看），实际 dtype 为 {m.dtype}。")
    return m


def _is_token_lists(tokens) -> bool:
    """q_tokens 是"每张图一个词列表"（而不是一个词列表）吗？"""
    return isinstance(tokens, (list, tuple)) and len(tokens) > 0 and all(
        isinstance(toks, (list, tuple)) for toks in tokens)


class AttentionHeatmap(CourseWidget):
    """注意力权重热力图。

    weights：(T, S) 一张图；(M, T, S) 多张图（如多个头），用 labels 命名并在下拉框里切换；
    (L, H, T, S) 会按"第 l 层 · 第 h 头"展开成 L×H 张。行对应 q_tokens，列对应 k_tokens。
    每张图的词不同（例如几条长短不一的评论各一张图，第 14 章）：weights 给 M 个二维数组的列表，
    q_tokens（和可选的 k_tokens）给 M 个词列表，每张图一个；这时 mask 也给 M 个布尔数组，
    第 m 个的形状能广播到第 m 张图（第 11 章：三种预训练范式各有自己的输入和掩码）。
    点击格子（或行首的词）会记录选择：Python 里用 .selected 与 .selected_weight 读取。
    mask（可选）：布尔数组，True 表示"可以看"，形状能广播到每张图 (T, S) 或全部 (M, T, S)；
    被屏蔽的格子画成"×"（第 3 章的掩码视图）。
    """

    _esm = esm("heatmap.js")

    weights = t.List(t.List(t.List(t.Float()))).tag(sync=True)   # (M, T, S)
    q_tokens = t.List(t.Unicode()).tag(sync=True)
    k_tokens = t.List(t.Unicode()).tag(sync=True)
    labels = t.List(t.Unicode()).tag(sync=True)
    map_index = t.Int(0).tag(sync=True)
    row = t.Int(-1).tag(sync=True)                              # -1 表示尚未选择
    col = t.Int(-1).tag(sync=True)
    title = t.Unicode("").tag(sync=True)
    query_axis = t.Unicode("查询 query").tag(sync=True)
    key_axis = t.Unicode("键 key").tag(sync=True)
    decimals = t.Int(3).tag(sync=True)
    mask = t.List(t.List(t.List(t.Bool()))).tag(sync=True)     # (M, T, S)；空列表表示没有掩码
    map_q_tokens = t.List(t.List(t.Unicode())).tag(sync=True)   # 每张图各自的查询词；空列表表示各图共用 q_tokens
    map_k_tokens = t.List(t.List(t.Unicode())).tag(sync=True)

    def __init__(self, weights, q_tokens, k_tokens=None, *, labels=None, title="",
                 query_axis="查询 query", key_axis="键 key", decimals=3, selected=None, mask=None, **kwargs):
        if _is_token_lists(q_tokens):
            self._init_per_map(weights, q_tokens, k_tokens, labels=labels, title=title, query_axis=query_axis,
                               key_axis=key_axis, decimals=decimals, mask=mask, **kwargs)
            if selected is not None:
                self.select(*selected)
            return
        w = _to_numpy(weights)
        if w.ndim == 2:
            w = w[None]                                         # (T, S) -> (1, T, S)
        elif w.ndim == 4:
            L, H = w.shape[:2]
            if labels is None:
                labels = [f"第 {l + 1} 层 · 第 {h + 1} 头" for l in range(L) for h in range(H)]
            w = w.reshape(L * H, *w.shape[2:])                  # (L, H, T, S) -> (L·H, T, S)
        elif w.ndim != 3:
            raise ValueError(
                f"weights 应为 (T, S)、(M, T, S) 或 (L, H, T, S) 的数组，实际形状为 {w.shape}。"
            )
        if not np.all(np.isfinite(w)):
            raise ValueError("weights 含有 NaN 或无穷大：请先检查掩码是否让某一行没有可看的键。")
        q_tokens = [str(s) for s in q_tokens]
        k_tokens = q_tokens if k_tokens is None else [str(s) for s in k_tokens]
        M, T, S = w.shape
        if len(q_tokens) != T or len(k_tokens) != S:
            raise ValueError(
                f"词的个数与权重形状不符：权重每张图是 (T={T}, S={S})，"
                f"却给了 {len(q_tokens)} 个查询词、{len(k_tokens)} 个键词。"
            )
        if labels is None:
            labels = [f"图 {i + 1}" for i in range(M)] if M > 1 else [""]
        labels = [str(s) for s in labels]
        if len(labels) != M:
            raise ValueError(f"labels 应有 {M} 个（每张图一个），实际有 {len(labels)} 个。")
        mask_list = []
        if mask is not None:
            m = _to_numpy_bool(mask)
            if m.ndim == 4:
                m = m.reshape(-1, *m.shape[2:])                 # (L, H, T, S) -> (L·H, T, S)
            try:
                m = np.broadcast_to(m, (M, T, S))
            except ValueError:
                raise ValueError(f"mask 的形状 {m.shape} 无法广播到权重的形状 {(M, T, S)}。") from None
            mask_list = m.tolist()
        super().__init__(
            mask=mask_list,
            weights=np.round(w, 6).tolist(), q_tokens=q_tokens, k_tokens=k_tokens, labels=labels,
            title=title, query_axis=query_axis, key_axis=key_axis, decimals=decimals, **kwargs,
        )
        if selected is not None:
            self.select(*selected)

    def _init_per_map(self, weights, q_tokens, k_tokens, *, labels, mask, **kwargs):
        """每张图各有自己的词（和大小）：weights 是 M 个 (T_m, S_m) 数组，q_tokens / k_tokens 是 M 个词列表；
        mask（可选）是 M 个布尔数组，第 m 个能广播到 (T_m, S_m)。"""
        q_lists = [[str(s) for s in toks] for toks in q_tokens]
        k_lists = q_lists if k_tokens is None else [[str(s) for s in toks] for toks in k_tokens]
        if isinstance(weights, np.ndarray) or hasattr(weights, "detach"):
            weights = list(weights)
        maps = [_to_numpy(w) for w in weights]
        M = len(maps)
        if M == 0 or len(q_lists) != M or len(k_lists) != M:
            raise ValueError(f"每张图一组词：给了 {M} 张图、{len(q_lists)} 组查询词、{len(k_lists)} 组键词，三者应相等且不为 0。")
        for i, (w, q, k) in enumerate(zip(maps, q_lists, k_lists)):
            if w.ndim != 2 or w.shape != (len(q), len(k)):
                raise ValueError(f"第 {i + 1} 张图的权重形状应为 ({len(q)}, {len(k)})（它的查询词数, 键词数），"
                                 f"实际为 {w.shape}。")
            if not np.all(np.isfinite(w)):
                raise ValueError(f"第 {i + 1} 张图的权重含有 NaN 或无穷大。")
        labels = [f"图 {i + 1}" for i in range(M)] if labels is None else [str(s) for s in labels]
        if len(labels) != M:
            raise ValueError(f"labels 应有 {M} 个（每张图一个），实际有 {len(labels)} 个。")
        mask_list = []
        if mask is not None:
            masks = [_to_numpy_bool(m) for m in mask]
            if len(masks) != M:
                raise ValueError(f"每张图各有自己的词时，mask 应是 {M} 个布尔数组（每张图一个），实际有 {len(masks)} 个。")
            for i, (m, w) in enumerate(zip(masks, maps)):
                try:
                    mask_list.append(np.broadcast_to(m, w.shape).tolist())   # (T_m, S_m)
                except ValueError:
                    raise ValueError(f"第 {i + 1} 张图的 mask 形状 {m.shape} 无法广播到它的权重形状 {w.shape}。") from None
        super().__init__(weights=[np.round(w, 6).tolist() for w in maps], q_tokens=[], k_tokens=[], mask=mask_list,
                         map_q_tokens=q_lists, map_k_tokens=k_lists, labels=labels, **kwargs)

    def current_tokens(self) -> tuple[list[str], list[str]]:
        """当前这张图的 (查询词, 键词)。"""
        if self.map_q_tokens:
            m = clamp(self.map_index, 0, len(self.map_q_tokens) - 1)
            return list(self.map_q_tokens[m]), list(self.map_k_tokens[m])
        return list(self.q_tokens), list(self.k_tokens)

    @t.observe("map_index")
    def _reclamp_selection(self, change):
        # 每张图大小不同：换图后超出新图范围的选择取消
        if self.map_q_tokens:
            q, k = self.current_tokens()
            if self.row >= len(q):
                self.row, self.col = -1, -1
            elif self.col >= len(k):
                self.col = -1

    @t.validate("map_index")
    def _clamp_map(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.weights) - 1, 0))

    @t.validate("row")
    def _clamp_row(self, proposal):
        return clamp(proposal["value"], -1, len(self.current_tokens()[0]) - 1)

    @t.validate("col")
    def _clamp_col(self, proposal):
        return clamp(proposal["value"], -1, len(self.current_tokens()[1]) - 1)

    def select(self, row: int, col: int | None = None, map_index: int | None = None):
        """选中第 row 个查询（可选第 col 个键、第 map_index 张图）；越界会被夹回有效范围。"""
        with self.hold_sync():
            if map_index is not None:
                self.map_index = map_index
            self.row = row
            self.col = -1 if col is None else col
        return self

    @property
    def selected(self) -> tuple[int, int] | None:
        """当前选中的 (行, 列)；只选了行时列为 None；什么都没选时为 None。"""
        if self.row < 0:
            return None
        return (self.row, None if self.col < 0 else self.col)

    def is_masked(self, row: int, col: int) -> bool:
        """第 row 个查询看第 col 个键是否被掩码屏蔽（当前这张图）。"""
        return bool(self.mask) and not self.mask[self.map_index][row][col]

    @property
    def selected_weight(self) -> float | None:
        """当前选中格子的权重；没有选中格子时为 None。"""
        if self.row < 0 or self.col < 0:
            return None
        return float(self.weights[self.map_index][self.row][self.col])

    def selected_row(self) -> np.ndarray | None:
        """当前选中查询对所有键的权重（一行）。"""
        if self.row < 0:
            return None
        return np.asarray(self.weights[self.map_index][self.row])


def head_maps(weights) -> tuple[list[str], list[np.ndarray]]:
    """一层的注意力 (H, T, T) → 图名与图：先是各头的平均，再一个头一张；每张图最上面加一行「（平均）」：
    这一层里每个字平均被看了多少（各查询行的平均）。第 14 章的评论热力图用它，浏览器里的 ReviewAttention 照做。"""
    w = _to_numpy(weights)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError(f"weights 应为一层的注意力 (H, T, T)，实际形状为 {w.shape}。")
    labels = [f"{w.shape[0]} 个头平均"] + [f"第 {k + 1} 头" for k in range(w.shape[0])]
    return labels, [np.vstack([m.mean(0, keepdims=True), m]) for m in [w.mean(0), *w]]
