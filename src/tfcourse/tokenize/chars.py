"""字表（character vocabulary）：中文最简单的分词——一个字一个 token。

第 11 章比较字、词、子词时引入字级分词；第 12–15 章的中文 BERT、GPT 和分类器都用它。
`CharVocab.build` 取训练文本里最常见的 `size` 个字，排在特殊 token 之后；字表之外的字记作 [UNK]。
字表可以存进检查点的 meta（`to_meta` / `from_meta`），载入模型时就拿回同一份字表。
"""
from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence

from .._checks import positive_int

__all__ = ["CharVocab"]


class CharVocab:
    """字 ↔ id。前面是特殊 token（默认 [PAD]=0、[UNK]=1），后面是按频率排好的字。"""

    def __init__(self, itos: Sequence[str], specials: Sequence[str] = ("[PAD]", "[UNK]")):
        itos, specials = list(itos), tuple(specials)
        if len(specials) < 2 or itos[:len(specials)] != list(specials):
            raise ValueError(f"字表应以特殊 token {list(specials)} 开头（至少要有填充和未知两个），实际开头是 {itos[:4]}。")
        if len(set(itos)) != len(itos):
            dup = [t for t, c in collections.Counter(itos).items() if c > 1][:5]
            raise ValueError(f"字表里有重复的 token：{dup}。")
        self.itos = itos
        self.specials = specials
        self.stoi = {t: i for i, t in enumerate(itos)}
        self.pad_id, self.unk_id = 0, 1

    @classmethod
    def build(cls, texts: Iterable[str], size: int, specials: Sequence[str] = ("[PAD]", "[UNK]")) -> "CharVocab":
        """特殊 token，再加 texts 里最常见的 size 个字（次数相同的按首次出现的先后）。"""
        size = positive_int(size, "size")
        counts = collections.Counter()
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise ValueError(f"texts 的每一项应为字符串，第 {i} 项是 {type(t).__name__}。")
            counts.update(t)
        chars = [ch for ch, _ in counts.most_common() if ch not in specials][:size]
        return cls(list(specials) + chars, specials)

    def __len__(self) -> int:
        return len(self.itos)

    def id(self, token: str) -> int:
        if token not in self.stoi:
            raise ValueError(f"{token!r} 不在字表里（字表有 {len(self)} 个 token）。")
        return self.stoi[token]

    def encode(self, text: str, max_len: int | None = None) -> list[int]:
        """每个字一个 id，字表之外的字记作 [UNK]；给了 max_len 就截断到前 max_len 个字。"""
        if not isinstance(text, str):
            raise ValueError(f"text 应为字符串，实际得到 {type(text).__name__}。")
        if max_len is not None:
            text = text[:positive_int(max_len, "max_len")]
        unk = self.unk_id
        return [self.stoi.get(ch, unk) for ch in text]

    def decode(self, ids: Iterable[int]) -> str:
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self):
                raise ValueError(f"id 应在 [0, {len(self) - 1}] 之间，实际得到 {i}。")
            if i != self.pad_id:
                out.append(self.itos[i])
        return "".join(out)

    def to_meta(self) -> dict:
        return {"itos": list(self.itos), "specials": list(self.specials)}

    @classmethod
    def from_meta(cls, meta: dict) -> "CharVocab":
        return cls(meta["itos"], meta["specials"])

    def __repr__(self) -> str:
        return f"CharVocab({len(self)} 个 token，特殊 token {list(self.specials)})"
