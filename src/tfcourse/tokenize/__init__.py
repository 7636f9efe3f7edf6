"""分词（第 11 章引入）：字表（chars.CharVocab）、从零写的字节级 BPE（bpe.BPETokenizer）、BERT 用的 WordPiece
（wordpiece.WordPieceTokenizer）与 XLM-R、T5 用的 Unigram（unigram.UnigramTokenizer）。

三者都和参考实现逐 token 对照：BPE 与 Unigram 对 `tokenizers`，WordPiece 对 `transformers.BertTokenizer`（见 tests/）。
MiniLM 的词表文件在 `tfcourse.data.minilm`，multilingual-e5-small 的在 `tfcourse.data.e5`。
"""
from .bpe import BPETokenizer
from .chars import CharVocab
from .unigram import UnigramTokenizer
from .wordpiece import WordPieceTokenizer

__all__ = ["BPETokenizer", "CharVocab", "UnigramTokenizer", "WordPieceTokenizer"]
