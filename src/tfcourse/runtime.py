"""每章开头与结尾都要做的事：固定随机种子、设置中文字体、计时。"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["set_seed", "ChapterClock", "start_chapter"]


def set_seed(seed: int = 0) -> None:
    """固定 Python、numpy 与 torch（若已安装）的随机种子，让同一种子给出同样的数字。"""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


@dataclass
class ChapterClock:
    """记录一章从开头到结尾的运行时间。"""

    chapter: int
    budget_s: float
    started: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def report(self) -> str:
        """返回一句本章运行时间的说明。

        只报告，不下判断：同一章在不同的机器上快慢可以差一半以上。各章是否在预算之内，
        由 make bench 在空闲的机器上一章一章地量（tools/bench.py）。"""
        # 第 17、18 个笔记本是附录 A、B
        name = f"附录 {chr(ord('A') + self.chapter - 17)} " if self.chapter > 16 else f"第 {self.chapter} 章"
        return f"{name}运行时间：{self.elapsed():.1f} 秒。"


STRICT_FONTS_ENV = "TFCOURSE_STRICT_FONTS"


def start_chapter(chapter: int, seed: int = 0, budget_s: float = 60.0) -> ChapterClock:
    """每章第一个代码单元调用：固定种子、设置中文字体、开始计时。

    环境变量 TFCOURSE_STRICT_FONTS=1（make book / make test 会设置）时，缺中文字体、
    或任何图里出现字体缺字（matplotlib 的 "Glyph … missing" 警告）都会直接报错。
    """
    import warnings

    from .plotting import use_chinese_font

    strict = os.environ.get(STRICT_FONTS_ENV) == "1"
    set_seed(seed)
    use_chinese_font(strict=strict)
    if strict:
        warnings.filterwarnings("error", message=r"Glyph \d+ .*missing from", category=UserWarning)
    return ChapterClock(chapter=chapter, budget_s=budget_s)
