"""BPE 合并探索器：拖动滑块走过前 N 次合并，看一句话的 token 怎样一步步拼起来。第 11 章引入。

每一步的切分都由 `tfcourse.tokenize.BPETokenizer.merge_history` 在 Python 里算好（只记录这句话发生变化的那些步），
浏览器只查表显示，所以静态网页上也能拖动。
"""
from __future__ import annotations

import numpy as np
import traitlets as t

from ._base import CourseWidget, clamp, esm

__all__ = ["BPEMergeExplorer", "token_label"]

_SHOW = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}


def token_label(data: bytes) -> str:
    """token 的字节串 → 显示用的文字：合法的 UTF-8 照常显示（空白换成 ␣ ⏎ 等符号），
    不成字符的字节（半个汉字）写成十六进制，连着的写在一起，例如 ⟨e5 a5⟩。"""
    out, bad, i = [], [], 0

    def flush():
        if bad:
            out.append("⟨" + " ".join(f"{b:02x}" for b in bad) + "⟩")
            bad.clear()

    while i < len(data):
        try:
            text = data[i:].decode("utf-8", errors="surrogatepass")
        except UnicodeDecodeError as exc:
            text = data[i:i + exc.start].decode("utf-8", errors="surrogatepass")
            if text:
                flush()
                out.append("".join(_SHOW.get(c, c) for c in text))
            bad.extend(data[i + exc.start:i + exc.end])
            i += exc.end
            continue
        flush()
        out.append("".join(_SHOW.get(c, c) for c in text))
        break
    flush()
    return "".join(out)


class BPEMergeExplorer(CourseWidget):
    """一句话在前 step 次合并之后的切分；step = 0 是纯字节，step = n_steps 是用满 n_steps 次合并。

    只同步这句话真正变化的那些步（change_steps 与对应的 change_ids），以及每次合并的显示文字（merges）。
    """

    _esm = esm("bpe_explorer.js")

    sentence = t.Unicode("").tag(sync=True)
    n_steps = t.Int(0).tag(sync=True)
    step = t.Int(0).tag(sync=True)
    merges = t.List(t.List(t.Unicode())).tag(sync=True)       # 第 k 步合并：[左 token, 右 token, 新 token]
    change_steps = t.List(t.Int()).tag(sync=True)             # 这句话的切分发生变化的步（从 0 开始）
    change_ids = t.List(t.List(t.Int())).tag(sync=True)       # 对应步之后的 token 编号
    labels = t.Dict().tag(sync=True)                          # 出现过的 token 编号（字符串）→ 显示文字

    def __init__(self, tokenizer, sentence: str, *, n_steps: int | None = None,
                 step: int = 0, **kwargs):
        if not hasattr(tokenizer, "merge_history"):      # 不导入 tokenize：小部件只用分词器给的结果
            raise ValueError(f"tokenizer 应为 BPETokenizer，实际得到 {type(tokenizer).__name__}。")
        if not isinstance(sentence, str) or not sentence:
            raise ValueError(f"sentence 应为非空字符串，实际得到 {sentence!r}。")
        total = len(tokenizer.merges)
        if n_steps is None:
            n_steps = total
        if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or not 0 <= n_steps <= total:
            raise ValueError(f"n_steps 应为 0 … {total} 之间的整数（合并表的长度），实际得到 {n_steps!r}。")
        n_steps = int(n_steps)
        steps, ids = tokenizer.merge_history(sentence, n_steps)
        used = {i for row in ids for i in row}
        merges = [[token_label(tokenizer.token_bytes(a)), token_label(tokenizer.token_bytes(b)),
                   token_label(tokenizer.token_bytes(256 + k))]
                  for k, (a, b) in enumerate(tokenizer.merges[:n_steps])]
        super().__init__(sentence=sentence, n_steps=n_steps, merges=merges, change_steps=steps,
                         change_ids=ids, labels={str(i): token_label(tokenizer.token_bytes(i)) for i in sorted(used)},
                         **kwargs)
        self.set(step)

    @t.validate("step")
    def _clamp_step(self, proposal):
        return clamp(proposal["value"], 0, self.n_steps)

    def set(self, step: int):
        """跳到第 step 步（越界会夹回 0 … n_steps）。返回自身。"""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise ValueError(f"step 应为整数，实际得到 {step!r}。")
        self.step = int(step)
        return self

    def token_ids(self, step: int | None = None) -> list[int]:
        """第 step 步（默认当前步）之后这句话的 token 编号。"""
        step = self.step if step is None else clamp(step, 0, self.n_steps)
        k = int(np.searchsorted(self.change_steps, step, side="right")) - 1
        return list(self.change_ids[k])

    def tokens(self, step: int | None = None) -> list[str]:
        """第 step 步之后这句话的 token（显示文字）。"""
        return [self.labels[str(i)] for i in self.token_ids(step)]
