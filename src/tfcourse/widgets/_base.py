"""小部件的公共基类与工具。"""
from __future__ import annotations

import pathlib

import anywidget

STATIC = pathlib.Path(__file__).parent / "static"


class CourseWidget(anywidget.AnyWidget):
    """全书小部件的基类：统一的样式表（亮色、暗色主题都适用）。"""

    _css = STATIC / "common.css"


def clamp(value: int, low: int, high: int) -> int:
    """把整数限制在 [low, high] 之内。"""
    return max(low, min(high, int(value)))
