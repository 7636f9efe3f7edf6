"""tfcourse：《从零构建 Transformer》各章共用的小包。

按概念组织：rnn（第 1 章）、attention（第 1–4 章）、positional（第 5 章）、layers（第 6–8 章：前馈网络、编码器层、解码器层）、
model（第 9 章：完整的 Transformer 与配置）、anatomy（第 6、9 章：模型结构图的每块参数与形状）、decode（第 10 章：贪心与束搜索）、readers（第 1 章训练对照的小模型）、
tokenize（第 11 章：字表、BPE 与 WordPiece）、bert（第 12 章）、gpt 与 sampling（第 13 章）、
evaluate（第 14 章：自助法区间、F1、混淆矩阵）、classify（第 14 章：评论分类器）、lora（第 15 章）、quantize（第 16 章：int8 量化）、
checkpoints（第 14–16 章载入的、课程自己训练的模型）、
train（训练循环）、data（数据集与生成器，含第 11–15 章的中文语料与 MiniLM 的文件）、widgets（交互小部件）、plotting（中文字体、绘图与表格）、
exercises（自动检查的练习，每章一个模块）、instructor（教师工具：布置与评分）、notebook（章节里的小工具：展示源码、核对、生成句子）、
runtime（种子与计时）、bench（计时）。
"""
from .runtime import set_seed, start_chapter

__version__ = "0.1.0"
__all__ = ["set_seed", "start_chapter", "__version__"]
