"""分词（第 11 章引入）：字表（chars.CharVocab）、从零写的字节级 BPE（bpe.BPETokenizer）与 BERT 用的 WordPiece（wordpiece.WordPieceTokenizer）。

两者都和参考实现逐 token 对照：BPE 对 `tokenizers`，WordPiece 对 `transformers.BertTokenizer`（见 tests/）。
MiniLM 的词表文件在 `tfcourse.data.minilm`。
"""
from .bpe import BPETokenizer
from .chars import CharVocab
from .wordpiece import WordPieceTokenizer

__all__ = ["BPETokenizer", "CharVocab", "WordPieceTokenizer"]
