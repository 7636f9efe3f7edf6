"""Transformer 架构全景图：论文图 1 那样的编码器、解码器两栏，点方块看它做什么、有多少参数、输出什么形状。

第 6 章引入（base 模型的参数花在哪里），第 9 章用来看读者自己模型里的形状。方块由
`tfcourse.anatomy.model_blocks` 在 Python 里算好，前端只负责摆放与选择。
"""
from __future__ import annotations

import numbers

import traitlets as t

from ._base import CourseWidget, esm

_KEYS = ("id", "label", "group", "repeat", "params", "total_params", "shape", "detail", "name")
_TEXT_KEYS = ("id", "label", "shape", "detail", "name")   # 另有可选的 kind（决定配色），没有时画成灰色


def _check_blocks(blocks) -> list[dict]:
    """检查并整理方块列表（model_blocks 的输出），返回只含 JSON 基本类型的新列表。"""
    if hasattr(blocks, "config") and hasattr(blocks, "encoder"):
        raise ValueError("ArchitectureMap 需要方块列表：先用 tfcourse.anatomy.model_blocks(model) 把模型拆成方块。")
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise ValueError(f"blocks 应为非空的方块列表（model_blocks 的输出），实际得到 {type(blocks).__name__}。")
    out, ids = [], set()
    for i, b in enumerate(blocks):
        if not isinstance(b, dict):
            raise ValueError(f"第 {i} 个方块应为 dict，实际得到 {type(b).__name__}。")
        missing = [k for k in _KEYS if k not in b]
        if missing:
            raise ValueError(f"第 {i} 个方块缺少字段 {missing}（需要 {list(_KEYS)}）。")
        if b["id"] in ids:
            raise ValueError(f"方块 id 重复：{b['id']!r}。")
        if b["group"] not in ("encoder", "decoder"):
            raise ValueError(f"方块 {b['id']!r} 的 group 应为 'encoder' 或 'decoder'，实际为 {b['group']!r}。")
        for k in ("repeat", "params", "total_params"):
            v = b[k]
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < (1 if k == "repeat" else 0):
                raise ValueError(f"方块 {b['id']!r} 的 {k} 应为{'正' if k == 'repeat' else '非负'}整数，实际为 {v!r}。")
        if b["total_params"] != b["params"] * b["repeat"]:
            raise ValueError(f"方块 {b['id']!r}：total_params = {b['total_params']} 不等于 "
                             f"params × repeat = {b['params']} × {b['repeat']}。")
        ids.add(b["id"])
        clean = {k: str(b[k]) for k in _TEXT_KEYS}
        clean.update(kind=str(b.get("kind", "")), group=b["group"], repeat=int(b["repeat"]), params=int(b["params"]),
                     total_params=int(b["total_params"]))
        out.append(clean)
    return out


class ArchitectureMap(CourseWidget):
    """可点击的 Transformer 结构图（论文图 1 的样子）：左栏编码器、右栏解码器，数据自下而上流动，重复的层框起来标 ×N。

    blocks：`tfcourse.anatomy.model_blocks(model, src, tgt)` 的输出。点方块（或 Tab 到方块上按 Enter）会选中它：
    Python 里用 .selected（方块 id，没选时为 ""）与 .selected_block 读取，用 .select(id) 设置。
    """

    _esm = esm("architecture_map.js")

    blocks = t.List(t.Dict()).tag(sync=True)
    selected = t.Unicode("").tag(sync=True)                     # 选中方块的 id；"" 表示没有选
    title = t.Unicode("").tag(sync=True)
    total_params = t.Int(0).tag(sync=True)

    def __init__(self, blocks, *, title: str = "", selected: str | None = None, **kwargs):
        super().__init__(blocks=_check_blocks(blocks), title=str(title), **kwargs)
        if selected is not None:
            self.select(selected)

    @t.validate("blocks")
    def _valid_blocks(self, proposal):
        return _check_blocks(proposal["value"])

    @t.observe("blocks")
    def _blocks_changed(self, change):
        with self.hold_sync():
            self.total_params = sum(b["total_params"] for b in change["new"])
            if self.selected and self.selected not in self.ids:
                self.selected = ""

    @t.validate("selected")
    def _valid_selected(self, proposal):
        value = proposal["value"]
        if value and value not in self.ids:
            raise ValueError(f"没有 id 为 {value!r} 的方块；可选的 id：{'、'.join(self.ids)}。")
        return value

    @property
    def ids(self) -> list[str]:
        """全部方块的 id（编码器在前，各自按数据流动的顺序）。"""
        return [b["id"] for b in self.blocks]

    def select(self, block_id: str | None) -> "ArchitectureMap":
        """选中 id 为 block_id 的方块（None 或 "" 表示取消选择）。返回自身。"""
        if block_id is not None and not isinstance(block_id, str):
            raise ValueError(f"block_id 应为字符串（方块的 id），实际得到 {block_id!r}。")
        self.selected = block_id or ""
        return self

    @property
    def selected_block(self) -> dict | None:
        """选中的方块（dict）；没有选时为 None。"""
        return next((b for b in self.blocks if b["id"] == self.selected), None) if self.selected else None
