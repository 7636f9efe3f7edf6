"""显示给读者的文本不带侮辱：评论语料里有脏话和歧视性的称呼，在它上面训练的模型也会写出来。

书页上的生成样本、评论原文，显示之前都过一遍 mask_offensive：命中 data/offensive_zh.txt 里的
词就换成同样多个 ＊。统计（困惑度、判别器的成功率）仍按模型真正写出的文本算，只是不把那几个字印出来。
第 13 章引入，第 13–16 章的样本与小部件都用它。
"""
from __future__ import annotations

import functools
import re
from importlib import resources

__all__ = ["offensive_patterns", "find_offensive", "is_clean", "mask_offensive", "MASK"]

MASK = "＊"


@functools.cache
def offensive_patterns() -> tuple[re.Pattern, ...]:
    """词表里的每个正则表达式（编译好的）。"""
    text = resources.files("tfcourse.data").joinpath("offensive_zh.txt").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in text.splitlines()]
    return tuple(re.compile(ln) for ln in lines if ln and not ln.startswith("#"))


def find_offensive(text: str) -> list[str]:
    """text 里命中词表的片段（按出现的位置排序；没有就是空列表）。"""
    if not isinstance(text, str):
        raise TypeError(f"find_offensive 需要一个字符串，收到的是 {type(text).__name__}")
    hits = [(m.start(), m.group(0)) for p in offensive_patterns() for m in p.finditer(text) if m.group(0)]
    return [h for _, h in sorted(hits)]


def is_clean(text: str) -> bool:
    """text 里没有词表里的词。"""
    return not find_offensive(text)


def mask_offensive(text: str) -> str:
    """把命中词表的片段换成同样多个 ＊（长度不变，位置不变）。"""
    if not isinstance(text, str):
        raise TypeError(f"mask_offensive 需要一个字符串，收到的是 {type(text).__name__}")
    chars = list(text)
    for p in offensive_patterns():
        for m in p.finditer(text):
            chars[m.start():m.end()] = MASK * (m.end() - m.start())
    return "".join(chars)
