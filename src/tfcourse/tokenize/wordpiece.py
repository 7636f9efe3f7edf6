"""WordPiece：BERT 的分词器，从零写（第 11 章引入，第 12 章用它读 MiniLM 的词表）。

两步：
1. 基本切分（basic tokenization）：删掉控制字符、各种空白都变成空格；每个汉字前后加空格（汉字一个字一个词）；
   小写（lowercase）并去掉重音（先做 Unicode NFD 分解，再删掉非间距组合符号 Mn）；按空白切开，
   每个标点单独成词。
2. 贪心最长匹配（greedy longest-match-first）：一个词从左往右，每次取词表里最长的前缀；词中间的片段带
   "##" 前缀。有一处切不下去，整个词就是 [UNK]；超过 100 个字符的词也直接是 [UNK]。
原文里照写的特殊 token（"[MASK]" 等）不经过这两步，直接是它自己。

MiniLM 的词表在 `tfcourse.data.minilm.minilm_dir()`。
与 `transformers.BertTokenizer`（它用 `tokenizers` 的 BertNormalizer + BertPreTokenizer + WordPiece）
在同一词表上逐 token、逐 id 相同（tests/test_wordpiece.py 在全部评论和带重音、标点、超长词的英文句子上核对）。
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

__all__ = ["WordPieceTokenizer"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SPECIAL_RE = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")
MAX_WORD_CHARS = 100   # 比这更长的"词"直接记作 [UNK]（BERT 的约定）

# Unicode 的 White_Space 字符（控制字符先被删掉，所以这里只剩它们之外的）
_WHITESPACE = set("\t\n\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}
# BERT 认作"汉字"的码位区间：CJK 统一表意文字及其扩展、兼容表意文字（不含日文假名和韩文）
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def is_punctuation(ch: str) -> bool:
    """BERT 的标点：ASCII 里所有非字母数字的可见符号（如 $ ^ `），加上 Unicode 类别 P*。"""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


class WordPieceTokenizer:
    """WordPiece 分词器。vocab：token → id（按词表文件的行号）。第 11 章引入。"""

    def __init__(self, vocab: dict[str, int], lowercase: bool = True, unk_token: str = "[UNK]"):
        if not isinstance(vocab, dict) or not vocab:
            raise ValueError(f"vocab 应为非空的 dict（token → id），实际得到 {type(vocab).__name__}。")
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"词表里缺少特殊 token {missing}：BERT 的词表须含 {list(SPECIAL_TOKENS)}。")
        self.vocab = dict(vocab)
        self.ids_to_tokens = {i: tok for tok, i in self.vocab.items()}
        self.lowercase = bool(lowercase)
        self.unk_token = unk_token
        self.unk_id, self.cls_id, self.sep_id = vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]
        self.pad_id, self.mask_id = vocab["[PAD]"], vocab["[MASK]"]

    @classmethod
    def from_file(cls, vocab_path, lowercase: bool = True) -> "WordPieceTokenizer":
        """从 BERT 的 vocab.txt 读词表（每行一个 token，行号就是 id）。"""
        path = Path(vocab_path)
        if not path.is_file():
            raise ValueError(f"找不到词表文件 {path}：应为 BERT 的 vocab.txt（每行一个 token）。")
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()                                   # 文件末尾的换行不是一个 token
        return cls({tok: i for i, tok in enumerate(lines)}, lowercase=lowercase)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def special_ids(self) -> tuple[int, ...]:
        return tuple(self.vocab[t] for t in SPECIAL_TOKENS)

    # ---- 第 1 步：基本切分 ------------------------------------------------
    def normalize(self, text: str) -> str:
        """清理控制字符与空白、给汉字两边加空格、（小写时）去重音并小写。"""
        out = []
        for ch in text:
            if ch in ("\x00", "\ufffd") or _is_control(ch):
                continue
            if ch in _WHITESPACE:
                out.append(" ")
            elif is_cjk(ch):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = "".join(out)
        if self.lowercase:
            text = unicodedata.normalize("NFD", text)
            text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn").lower()
        return text

    def basic_tokenize(self, text: str) -> list[str]:
        """按空白切开，每个标点单独成一个词。"""
        words = []
        for chunk in self.normalize(text).split():
            current = ""
            for ch in chunk:
                if is_punctuation(ch):
                    if current:
                        words.append(current)
                    words.append(ch)
                    current = ""
                else:
                    current += ch
            if current:
                words.append(current)
        return words

    # ---- 第 2 步：贪心最长匹配 --------------------------------------------
    def wordpiece(self, word: str) -> list[str]:
        """一个词切成词表里的片段：每次取最长的前缀，中间的片段带 "##"；切不下去就整词 [UNK]。"""
        if len(word) > MAX_WORD_CHARS:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:                              # 连一个字符都不在词表里
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """文本 → 片段。原文里照写的特殊 token（如 "[MASK]"，大小写须一致）保持为一个 token。"""
        if not isinstance(text, str):
            raise ValueError(f"tokenize 需要一个字符串，实际得到 {type(text).__name__}。")
        pieces = []
        for i, part in enumerate(_SPECIAL_RE.split(text)):
            if i % 2:                                     # 奇数段是切出来的特殊 token
                pieces.append(part)
            else:
                pieces += [p for word in self.basic_tokenize(part) for p in self.wordpiece(word)]
        return pieces

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """文本 → id；add_special_tokens 时首尾加 [CLS] 与 [SEP]。"""
        ids = [self.vocab[p] for p in self.tokenize(text)]
        return [self.cls_id, *ids, self.sep_id] if add_special_tokens else ids

    def convert_ids_to_tokens(self, ids) -> list[str]:
        tokens = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or i not in self.ids_to_tokens:
                raise ValueError(f"id 应为 0 到 {self.vocab_size - 1} 之间的整数，实际得到 {i!r}。")
            tokens.append(self.ids_to_tokens[i])
        return tokens

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        """id → 文本：片段之间用空格连接，"##" 片段接回前一个片段（大小写与重音回不来）。"""
        ids = [int(i) if hasattr(i, "item") else i for i in ids]
        tokens = self.convert_ids_to_tokens(ids)
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in SPECIAL_TOKENS or t == self.unk_token]
        return " ".join(tokens).replace(" ##", "")

    def __repr__(self) -> str:
        return f"WordPieceTokenizer(vocab_size={self.vocab_size}, lowercase={self.lowercase})"
