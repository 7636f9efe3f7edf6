"""RoPE 探索器：gpt-zh-llama 的一个查询头与一个键，放在位置 m 和 n，看 q、k 各对维度转过的角度，
以及打分怎样只取决于 m − n。附录 A 引入。

q、k 取自模型第一层：一个字的词向量 → RMSNorm → q_proj / k_proj，取一个头（这个头所在的那组键）。
所有位置的旋转结果与打分都由 Python（`llama.rope_cos_sin`、`llama.apply_rope`）算好，
浏览器只查表、画图，所以静态网页上也能拖动。
"""
from __future__ import annotations

import numpy as np
import traitlets as t

from .._checks import positive_int
from ._base import CourseWidget, clamp, esm

__all__ = ["RopeExplorer", "rope_view"]


def rope_view(model, vocab, query_char: str, key_char: str, *, layer: int = 0, head: int = 0,
              n_positions: int = 128, pairs=(0, 4, 15)) -> dict:
    """RopeExplorer 要的全部数：
    scores (N, N)：位置 m 的查询对位置 n 的键的打分 (R_m q)·(R_n k) / √D（只用到 n ≤ m 的下三角）；
    q_pairs、k_pairs (N, len(pairs), 2)：所选几对维度在每个位置转过之后的坐标；omega：这几对的角频率。"""
    import torch

    from ..llama import LlamaGPT

    with torch.no_grad():
        return _rope_view(model, vocab, query_char, key_char, layer, head, n_positions, pairs, LlamaGPT)


def _rope_view(model, vocab, query_char, key_char, layer, head, n_positions, pairs, LlamaGPT):
    import torch

    from ..llama import apply_rope, rope_cos_sin

    if not isinstance(model, LlamaGPT):
        raise ValueError(f"model 应为 tfcourse.llama.LlamaGPT，实际得到 {type(model).__name__}。")
    c = model.config
    N = positive_int(n_positions, "n_positions")
    if not 0 <= layer < c.n_layers or not 0 <= head < c.n_heads:
        raise ValueError(f"layer 应在 0…{c.n_layers - 1}、head 在 0…{c.n_heads - 1} 之内，实际为 {layer}、{head}。")
    for name, ch in (("query_char", query_char), ("key_char", key_char)):
        if not isinstance(ch, str) or len(ch) != 1 or ch not in vocab.stoi:
            raise ValueError(f"{name} 应为字表里的一个字，实际得到 {ch!r}。")
    D, half = c.d_head, c.d_head // 2
    pairs = [int(p) for p in pairs]
    if any(not 0 <= p < half for p in pairs):
        raise ValueError(f"pairs 里的维度对应在 0…{half - 1} 之内，实际为 {pairs}。")
    block = model.layers[layer]
    x = block.attn_norm(model.tok_emb(torch.tensor([vocab.stoi[query_char], vocab.stoi[key_char]])))   # (2, C)
    g = head // (c.n_heads // c.n_kv_heads)                                # 这个头用的那组键
    q = block.attn.q_proj(x[0]).view(c.n_heads, D)[head]                   # (D,)
    k = block.attn.k_proj(x[1]).view(c.n_kv_heads, D)[g]
    if block.attn.q_norm is not None:
        q, k = block.attn.q_norm(q), block.attn.k_norm(k)
    cos, sin = rope_cos_sin(torch.arange(N), D, c.rope_base)
    qr, kr = apply_rope(q.expand(N, D), cos, sin), apply_rope(k.expand(N, D), cos, sin)   # (N, D)
    scores = (qr @ kr.T) / D ** 0.5                                        # (N, N)
    # "half" 排法：第 i 对是第 i 维与第 i + D/2 维
    take = lambda v: torch.stack([v[:, pairs], v[:, [p + half for p in pairs]]], dim=-1)   # (N, P, 2)
    omega = 1.0 / c.rope_base ** (torch.tensor(pairs, dtype=torch.float64) * 2 / D)
    return {"scores": scores.numpy(), "q_pairs": take(qr).numpy(), "k_pairs": take(kr).numpy(),
            "omega": omega.numpy(), "pairs": pairs, "d_head": D}


class RopeExplorer(CourseWidget):
    """拖动查询的位置 m、键的位置 n（n ≤ m）：左边三个表盘是 q、k 的三对维度（快、中、慢），各按自己的角频率转；
    右边是打分随距离 m − n 的变化。点「两个都往后挪 8 位」：m、n 一起变，距离不变，打分也不变。"""

    _esm = esm("rope_explorer.js")

    n_positions = t.Int(1).tag(sync=True)
    window = t.Int(64).tag(sync=True)
    query_char = t.Unicode("").tag(sync=True)
    key_char = t.Unicode("").tag(sync=True)
    scores = t.List(t.Float()).tag(sync=True)                   # 下三角按行摊平：第 m 行是 n = 0…m
    q_pairs = t.List(t.Float()).tag(sync=True)                  # (N, P, 2) 摊平
    k_pairs = t.List(t.Float()).tag(sync=True)
    pairs = t.List(t.Int()).tag(sync=True)
    omega = t.List(t.Float()).tag(sync=True)
    query_pos = t.Int(0).tag(sync=True)
    key_pos = t.Int(0).tag(sync=True)

    def __init__(self, model, vocab, query_char: str = "好", key_char: str = "很", *, query_pos: int = 20,
                 key_pos: int = 17, n_positions: int = 128, window: int = 64, **kwargs):
        v = rope_view(model, vocab, query_char, key_char, n_positions=n_positions)
        N = v["scores"].shape[0]
        tri = np.concatenate([v["scores"][m, :m + 1] for m in range(N)])
        r = lambda a: [round(float(x), 5) for x in np.asarray(a).ravel()]
        super().__init__(n_positions=N, window=positive_int(window, "window"), query_char=query_char,
                         key_char=key_char, scores=r(tri), q_pairs=r(v["q_pairs"]), k_pairs=r(v["k_pairs"]),
                         pairs=v["pairs"], omega=[float(x) for x in v["omega"]], **kwargs)
        self.set(query_pos, key_pos)

    @t.validate("query_pos")
    def _clamp_query(self, proposal):
        return clamp(proposal["value"], 0, self.n_positions - 1)

    @t.validate("key_pos")
    def _clamp_key(self, proposal):
        return clamp(proposal["value"], 0, self.query_pos)             # 因果：键不在查询之后

    def set(self, query_pos: int | None = None, key_pos: int | None = None):
        """选中查询的位置与键的位置（越界夹回：0 ≤ n ≤ m < n_positions）。返回自身。"""
        with self.hold_sync():
            for name, value in (("query_pos", query_pos), ("key_pos", key_pos)):
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise ValueError(f"{name} 应为整数，实际得到 {value!r}。")
                setattr(self, name, int(value))
            self.key_pos = self.key_pos                                # 查询挪到键之前时，键跟着夹回
        return self

    def score(self, m: int | None = None, n: int | None = None) -> float:
        """位置 m 的查询对位置 n 的键的打分（缺省为当前选中的两个位置）。"""
        m = self.query_pos if m is None else m
        n = self.key_pos if n is None else n
        if not 0 <= n <= m < self.n_positions:
            raise ValueError(f"需要 0 ≤ n ≤ m < {self.n_positions}，实际 m = {m}、n = {n}。")
        return self.scores[m * (m + 1) // 2 + n]
