"""小部件的公共基类与工具。"""
from __future__ import annotations

import pathlib

import anywidget

STATIC = pathlib.Path(__file__).parent / "static"


def esm(name: str, live: bool = False) -> str:
    """小部件的前端模块：共用工具 _dom.js 拼在 static/name 前面（静态网页上模块之间不能相互 import）；
    live=True 时再拼上 _live.js（把读者的文字交给课程的模型，见 LiveModels）。"""
    parts = ("_dom.js", "_live.js", name) if live else ("_dom.js", name)
    return "\n".join((STATIC / f).read_text(encoding="utf-8") for f in parts)


class CourseWidget(anywidget.AnyWidget):
    """全书小部件的基类：统一的样式表（亮色、暗色主题都适用）。"""

    _css = STATIC / "common.css"


def clamp(value: int, low: int, high: int) -> int:
    """把整数限制在 [low, high] 之内。"""
    return max(low, min(high, int(value)))
