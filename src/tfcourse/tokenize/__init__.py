"""分词（第 11 章引入）：从零写的字节级 BPE（bpe.BPETokenizer）与 BERT 用的 WordPiece（wordpiece.WordPieceTokenizer）。

两者都和参考实现逐 token 对照：BPE 对 `tokenizers`，WordPiece 对 `transformers.BertTokenizer`（见 tests/）。
"""
from __future__ import annotations

__all__ = ["BPETokenizer", "WordPieceTokenizer"]


def __getattr__(name):       # 用到才导入：两个分词器互不依赖
    if name == "BPETokenizer":
        from .bpe import BPETokenizer
        return BPETokenizer
    if name == "WordPieceTokenizer":
        from .wordpiece import WordPieceTokenizer
        return WordPieceTokenizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
