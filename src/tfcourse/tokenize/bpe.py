"""字节级 BPE（byte-level Byte Pair Encoding），从零实现。第 11 章引入。

- 基础词表是 256 个字节值（编号 0–255）；第 i 次合并产生编号 256 + i 的新 token。
- 文本先按 UTF-8 编成字节（`errors="surrogatepass"`：落单的代理项 U+D800–U+DFFF 也编成 3 个字节，
  解码时原样还原），所以任何 Python 字符串都能编码，并且 decode(encode(s)) == s。
- 预切分（pre-tokenization）：`split_chunks` 把文本切成块，合并从不跨越块的边界。
  一段连续的汉字是一块（中文没有空格，词的边界留给 BPE 自己去找）；一段其他文字（拉丁字母等，
  可带一个前导空格）是一块；一段数字、一段标点（可带一个前导空格）、一段空白各是一块。
- 平局规则：训练时每一步合并出现次数最多的相邻对；次数相同的，取编号对 (a, b) 按字典序最小的那个。
  所以训练是确定的，与字典的遍历顺序无关。
- 训练是增量的（`train`）：维护每个相邻对的计数和"哪些块含有它"，每次合并只重算被碰到的块；
  `train_naive` 每一步重新数一遍整个语料，只用来对照（两者给出完全相同的合并）。
"""
from __future__ import annotations

import heapq
import json
import os
import re
from collections import Counter, defaultdict
from typing import Iterable

__all__ = ["BPETokenizer", "split_chunks", "CHUNK_PATTERN"]

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
# 预切分的正则（按顺序尝试）：汉字串 | 可带前导空格的非汉字字母串 | 数字串 | 标点串 | 空白 | 其余任一字符
CHUNK_PATTERN = (
    f"[{_HAN}]+"
    f"| ?(?:(?![{_HAN}])[^\\W\\d_])+"
    r"| ?\d+"
    r"| ?[^\s\w]+"
    r"|\s+(?!\S)|\s+"
    r"|[\s\S]"
)
_CHUNK_RE = re.compile(CHUNK_PATTERN)


def split_chunks(text: str) -> list[str]:
    """把文本切成预切分块；各块首尾相接恰好还原 text。"""
    return _CHUNK_RE.findall(text)


def _check_text(text, what: str = "text") -> str:
    if not isinstance(text, str):
        raise ValueError(f"{what} 应为字符串（str），实际得到 {type(text).__name__}：{text!r:.60}。")
    return text


def _to_bytes(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


def _merge_word(word: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """把 word 里所有不重叠的相邻对 pair 从左到右换成 new_id。"""
    a, b = pair
    out, i, n = [], 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def _merge_tracked(word: list[int], pair: tuple[int, int], new_id: int, f: int, j: int,
                   touched: dict, where: dict) -> list[int]:
    """同 _merge_word，并把相邻对计数的变化（乘以块的频数 f）记进 touched，新出现的对登记块 j。

    只看合并位置的左右邻居：(左, a) 与 (b, 右) 减少，(左, 新) 与 (新, 右) 增加。左邻居取已经
    合并过的新序列里的符号，所以 "a b a b" 这样连续的合并也算得对。
    """
    a, b = pair
    out, i, n = [], 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            if out:                              # 左邻居
                left = out[-1]
                touched[left, a] -= f
                touched[left, new_id] += f
                where[left, new_id].add(j)
            if i + 2 < n:                        # 右邻居
                right = word[i + 2]
                touched[b, right] -= f
                touched[new_id, right] += f
                where[new_id, right].add(j)
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def _chunk_table(texts) -> Counter:
    """语料 → 块的频数表 {块的字节: 次数}。"""
    if isinstance(texts, str):
        raise ValueError("texts 应为字符串的列表（或其他可迭代对象），实际得到一个字符串；"
                         "请写成 [text]。")
    table: Counter = Counter()
    for k, text in enumerate(texts):
        _check_text(text, f"texts[{k}]")
        table.update(_to_bytes(c) for c in split_chunks(text))
    return table


def _check_vocab_size(vocab_size) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise ValueError(f"vocab_size 应为整数，实际得到 {vocab_size!r}（类型 {type(vocab_size).__name__}）。")
    if vocab_size < 256:
        raise ValueError(f"vocab_size 应 ≥ 256（256 个字节是基础词表），实际得到 {vocab_size}。")
    return vocab_size


class BPETokenizer:
    """字节级 BPE 分词器：`merges[i] = (a, b)` 表示编号 a、b 相邻时合并成编号 256 + i。"""

    def __init__(self, merges: Iterable[tuple[int, int]] = ()):
        merges = [tuple(int(x) for x in m) for m in merges]
        self._bytes: list[bytes] = [bytes([i]) for i in range(256)]
        for i, m in enumerate(merges):
            if len(m) != 2 or not all(0 <= x < 256 + i for x in m):
                raise ValueError(f"merges[{i}] 应为两个已有编号（0 … {255 + i}）组成的对，实际得到 {m}。")
            self._bytes.append(self._bytes[m[0]] + self._bytes[m[1]])
        self.merges: list[tuple[int, int]] = merges
        self._rank = {m: i for i, m in enumerate(merges)}
        self._cache: dict[str, list[int]] = {}

    # ------------------------------------------------------------------ 训练

    @classmethod
    def train(cls, texts, vocab_size: int, *, min_frequency: int = 2,
              progress: bool = False) -> "BPETokenizer":
        """在语料 texts 上增量训练到 vocab_size 个 token（合并对的次数低于 min_frequency 时提前停止）。"""
        vocab_size = _check_vocab_size(vocab_size)
        table = _chunk_table(texts)
        words = [list(w) for w in table]                    # 每块当前的 token 序列
        freqs = list(table.values())
        counts: Counter = Counter()                          # 相邻对 → 加权次数
        where: defaultdict = defaultdict(set)                # 相邻对 → 含有它的块
        for j, w in enumerate(words):
            for p in zip(w, w[1:]):
                counts[p] += freqs[j]
                where[p].add(j)
        heap = [(-c, p) for p, c in counts.items()]          # 次数最多、同次数时编号对最小的先出
        heapq.heapify(heap)
        merges: list[tuple[int, int]] = []
        bar = _progress(vocab_size - 256, progress)
        while len(merges) < vocab_size - 256 and heap:
            neg, pair = heapq.heappop(heap)
            if counts.get(pair, 0) != -neg:                  # 过期的条目：计数已经变了
                continue
            if -neg < min_frequency:
                break
            new_id = 256 + len(merges)
            merges.append(pair)
            touched: defaultdict = defaultdict(int)
            for j in where.pop(pair):
                words[j] = _merge_tracked(words[j], pair, new_id, freqs[j], j, touched, where)
            for p, delta in touched.items():
                if delta:
                    c = counts.get(p, 0) + delta
                    if c > 0:
                        counts[p] = c
                        heapq.heappush(heap, (-c, p))
                    else:
                        counts.pop(p, None)
            counts.pop(pair, None)
            bar.update(1)
        _finish(bar, len(merges))
        return cls(merges)

    @classmethod
    def train_naive(cls, texts, vocab_size: int, *, min_frequency: int = 2) -> "BPETokenizer":
        """朴素训练：每次合并前重新数一遍所有相邻对（慢，只用来和 train 对照）。"""
        vocab_size = _check_vocab_size(vocab_size)
        table = _chunk_table(texts)
        words, freqs = [list(w) for w in table], list(table.values())
        merges: list[tuple[int, int]] = []
        while len(merges) < vocab_size - 256:
            counts: Counter = Counter()
            for w, f in zip(words, freqs):
                for p in zip(w, w[1:]):
                    counts[p] += f
            if not counts:
                break
            pair = min(counts, key=lambda p: (-counts[p], p))     # 同一平局规则
            if counts[pair] < min_frequency:
                break
            new_id = 256 + len(merges)
            merges.append(pair)
            words = [_merge_word(w, pair, new_id) for w in words]
        return cls(merges)

    # ------------------------------------------------------------------ 编码与解码

    @property
    def vocab_size(self) -> int:
        """词表大小：256 + 合并次数。"""
        return 256 + len(self.merges)

    def token_bytes(self, token_id: int) -> bytes:
        """编号 token_id 代表的字节串。"""
        self._check_id(token_id, "token_id")
        return self._bytes[token_id]

    def _check_id(self, token_id, what: str) -> None:
        if isinstance(token_id, bool) or not isinstance(token_id, int) and not hasattr(token_id, "__index__"):
            raise ValueError(f"{what} 应为整数编号，实际得到 {token_id!r}（类型 {type(token_id).__name__}）。")
        if not 0 <= int(token_id) < self.vocab_size:
            raise ValueError(f"{what} 应在 0 … {self.vocab_size - 1} 之内（词表大小 {self.vocab_size}），"
                             f"实际得到 {int(token_id)}。")

    def _encode_chunk(self, chunk: str) -> list[int]:
        ids = list(_to_bytes(chunk))
        rank, never = self._rank.get, len(self.merges)
        while len(ids) >= 2:
            # 当前相邻对里最早学到的那条合并（rank 最小）先做
            pairs = list(zip(ids, ids[1:]))
            ranks = [rank(p, never) for p in pairs]
            best = min(ranks)
            if best == never:
                break
            ids = _merge_word(ids, pairs[ranks.index(best)], 256 + best)
        return ids

    def encode(self, text: str) -> list[int]:
        """文本 → token 编号列表。"""
        _check_text(text)
        out: list[int] = []
        for chunk in split_chunks(text):
            ids = self._cache.get(chunk)
            if ids is None:
                ids = self._encode_chunk(chunk)
                if len(self._cache) < 200_000:
                    self._cache[chunk] = ids
            out.extend(ids)
        return out

    def tokens(self, text: str) -> list[bytes]:
        """文本 → 每个 token 的字节串（便于观察）。"""
        return [self._bytes[i] for i in self.encode(text)]

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """token 编号 → 文本。编码得到的序列总能原样还原；任意拼凑的序列若不是合法 UTF-8，
        errors="replace" 时非法处换成 U+FFFD，errors="strict" 时抛出 ValueError。"""
        if isinstance(ids, (str, bytes)):
            raise ValueError(f"ids 应为整数编号的列表，实际得到 {type(ids).__name__}：{ids!r:.60}。")
        if errors not in ("replace", "strict"):
            raise ValueError(f"errors 应为 'replace' 或 'strict'，实际得到 {errors!r}。")
        ids = list(ids)
        for k, i in enumerate(ids):
            self._check_id(i, f"ids[{k}]")
        data = b"".join(self._bytes[int(i)] for i in ids)
        try:
            return data.decode("utf-8", errors="surrogatepass")
        except UnicodeDecodeError as exc:
            if errors == "strict":
                raise ValueError(f"这些 token 拼起来不是合法的 UTF-8 字节串：{exc}") from None
            return data.decode("utf-8", errors="replace")

    def token_counts(self, texts) -> list[int]:
        """texts 在只用前 k 次合并时一共有多少个 token，k = 0 … len(merges)（一次算出整条曲线）。

        与逐个 k 调用 BPETokenizer(merges[:k]).encode 相同：按顺序做每一次合并，只碰含有这一对的块。
        """
        table = _chunk_table(texts)
        words, freqs = [list(w) for w in table], list(table.values())
        where: defaultdict = defaultdict(set)
        for j, w in enumerate(words):
            for p in zip(w, w[1:]):
                where[p].add(j)
        total = sum(len(w) * f for w, f in zip(words, freqs))
        out = [total]
        touched: defaultdict = defaultdict(int)              # 这里用不到计数，只借用同一个合并函数
        for k, pair in enumerate(self.merges):
            for j in where.pop(pair, ()):
                new = _merge_tracked(words[j], pair, 256 + k, freqs[j], j, touched, where)
                total -= (len(words[j]) - len(new)) * freqs[j]
                words[j] = new
            touched.clear()
            out.append(total)
        return out

    def merge_history(self, text: str, n_steps: int | None = None) -> tuple[list[int], list[list[int]]]:
        """依次做前 n_steps 次合并（默认全部），记下 text 的切分每次变化后的样子。

        返回 (steps, ids)：steps[0] = 0、ids[0] 是纯字节；之后 steps[m] 是第几次合并改变了切分，
        ids[m] 是那次合并之后的 token 编号。第 k 步的切分 = 只用前 k 次合并编码的结果。
        """
        _check_text(text)
        n_steps = len(self.merges) if n_steps is None else n_steps
        chunks = [list(_to_bytes(c)) for c in split_chunks(text)]
        steps, ids = [0], [[i for c in chunks for i in c]]
        for k, pair in enumerate(self.merges[:n_steps]):
            new = [_merge_word(c, pair, 256 + k) for c in chunks]
            if any(len(a) != len(b) for a, b in zip(new, chunks)):
                chunks = new
                steps.append(k + 1)
                ids.append([i for c in chunks for i in c])
        return steps, ids

    # ------------------------------------------------------------------ 保存与读取

    def save(self, path) -> None:
        """把合并表写成 JSON 文件。"""
        data = {"format": "tfcourse-bpe", "version": 1, "chunk_pattern": CHUNK_PATTERN,
                "merges": [list(m) for m in self.merges]}
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            json.dump(data, f)

    @classmethod
    def load(cls, path) -> "BPETokenizer":
        """读取 save 写出的文件。"""
        with open(os.fspath(path), encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != "tfcourse-bpe":
            raise ValueError(f"{path} 应为 BPETokenizer.save 写出的文件（format = 'tfcourse-bpe'），"
                             f"实际得到 {str(data)[:60]!r}。")
        if data.get("chunk_pattern") != CHUNK_PATTERN:
            raise ValueError(f"{path} 用的预切分规则与当前版本不同，不能直接读取。")
        return cls(data["merges"])

    def __eq__(self, other) -> bool:
        return isinstance(other, BPETokenizer) and self.merges == other.merges

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={self.vocab_size})"


class _NoBar:
    total = 0

    def update(self, n=1):
        pass

    def close(self):
        pass


def _progress(total: int, show: bool):
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm
    # leave=True：结束后进度条留在输出里、停在终点（保存下来的网页显示的就是这个最后的样子）
    return tqdm(total=total, desc="BPE 合并", unit="次", leave=True)


def _finish(bar, done: int) -> None:
    """关闭进度条。提前停止（剩下的对都少于 min_frequency 次，或没有相邻对了）时，
    总数改成实际做了的合并次数并注明，进度条停在终点，而不是停在半路、显示成出错。"""
    if done < bar.total:
        bar.set_postfix_str(f"提前停止：要求 {bar.total} 次", refresh=False)
        bar.total = done
        if hasattr(bar, "container"):               # tqdm.notebook：进度条控件的最大值也要跟着改
            bar.container.children[1].max = done
    bar.close()
