"""tfcourse：《从零构建 Transformer》各章共用的小包。

按概念组织：rnn（第 1 章）、attention（第 1–4 章）、positional（第 5 章）、layers（第 6–8 章：前馈网络、编码器层、解码器层）、
model（第 9 章：完整的 Transformer 与配置）、anatomy（第 6、9 章：模型结构图的每块参数与形状）、decode（第 10 章：贪心与束搜索）、gpt 与 sampling（第 13 章：只有解码器的语言模型、KV 缓存、温度 / top-k / top-p）、readers（第 1 章训练对照的小模型）、
train（训练循环）、data（数据集与生成器）、widgets（交互小部件）、plotting（中文字体、绘图与表格）、
exercises（自动检查的练习，每章一个模块）、instructor（教师工具：布置与评分）、notebook（章节里的小工具：展示源码、核对、生成句子）、
runtime（种子与计时）、bench（计时）。
"""
from .runtime import set_seed, start_chapter

__version__ = "0.1.0"
__all__ = ["set_seed", "start_chapter", "__version__"]
