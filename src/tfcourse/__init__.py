"""tfcourse：《从零构建 Transformer》各章共用的小包。

按概念组织：rnn（第 1 章）、attention（第 1–4 章）、widgets（交互小部件）、
plotting（中文字体与绘图）、exercises（自动检查的练习）、runtime（种子与计时）、bench（计时）。
"""
from .runtime import set_seed, start_chapter

__version__ = "0.1.0"
__all__ = ["set_seed", "start_chapter", "__version__"]
