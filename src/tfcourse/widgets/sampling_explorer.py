"""采样探索器：一步一步看 GPT 的一次生成，拖动温度、top-k、top-p，看每条规则留下哪些候选。第 13 章引入。

Python 先让模型生成一段话（生成时的设置记在 `generation` 里），再沿着这条路径算出每一步的下一个 token 分布：
每一步打分最高的 n_top 个候选、它们在网格里每个温度下的概率，以及温度 × top-k × top-p 的每种组合
留下了几个候选、留下的总概率。前端只查表画图，所以静态网页上也能拖动。
"""
from __future__ import annotations

import numpy as np
import torch
import traitlets as t

from .. import gpt as gpt_module
from .. import sampling
from ._base import CourseWidget, clamp, esm

TEMPERATURES = (0.5, 0.8, 1.0, 1.2, 1.5)
TOP_KS = (0, 1, 3, 5, 10, 20, 50)          # 0 表示不用 top-k
TOP_PS = (1.0, 0.5, 0.7, 0.8, 0.9, 0.95)   # 1.0 表示不用 top-p


def _nearest(values, x) -> int:
    return int(np.argmin([abs(v - x) for v in values]))


@torch.no_grad()
def trace_generation(model, prompt_ids, max_new_tokens: int, *, temperature: float = 1.0,
                     top_k: int | None = None, top_p: float | None = None, seed: int = 0,
                     temperatures=TEMPERATURES, top_ks=TOP_KS, top_ps=TOP_PS, n_top: int = 30,
                     suppress_ids=None) -> dict:
    """生成一次（gpt.generate，种子 seed），再沿这条路径预先算好小部件要显示的一切。

    返回字典：ids（提示 + 生成的全部 id）、n_prompt、cand_ids (n, n_top)、probs (n_T, n, n_top)、
    kept (n_T, n_k, n_p, n)：先 top-k 再 top-p 之后留下的候选个数（留下的总是打分最高的那几个）、
    kept_mass（同形状）：留下的候选在该温度下的总概率、drawn_rank (n,)：抽中的 token 的打分在整个词表里排第几（0 起；可能超出 n_top）。
    """
    if not isinstance(model, gpt_module.GPT):
        raise ValueError(f"model 应为 tfcourse.gpt.GPT，实际得到 {type(model).__name__}。")
    temperatures = [float(x) for x in temperatures]
    if temperature not in temperatures:
        raise ValueError(f"生成用的温度 {temperature} 应在温度网格 {temperatures} 里（初始视图要显示它）。")
    gen = torch.Generator().manual_seed(int(seed))
    ids = gpt_module.generate(model, prompt_ids, max_new_tokens, temperature=temperature, top_k=top_k,
                              top_p=top_p, generator=gen, suppress_ids=suppress_ids)[:1]   # (1, T0 + n)
    n_prompt = torch.as_tensor(prompt_ids).reshape(-1).numel() if torch.as_tensor(prompt_ids).dim() == 1 \
        else torch.as_tensor(prompt_ids).shape[1]
    was_training = model.training
    model.eval()
    logits = model(ids[:, :-1])[0, n_prompt - 1:].float()                      # (n, V)：每一步的打分
    suppress = gpt_module._check_suppress(suppress_ids, logits.shape[-1])
    if suppress is not None:
        logits[:, suppress] = float("-inf")                                    # 与生成时一样：这些 token 不参与
    model.train(was_training)
    n, V = logits.shape
    n_top = min(int(n_top), V)
    order = logits.argsort(dim=-1, descending=True)                            # (n, V)
    cand = order[:, :n_top]                                                    # (n, n_top)
    drawn = ids[0, n_prompt:]                                                  # (n,)
    rank = (order == drawn[:, None]).float().argmax(dim=-1)                    # (n,)
    probs = np.zeros((len(temperatures), n, n_top))
    kept = np.zeros((len(temperatures), len(top_ks), len(top_ps), n), dtype=int)
    mass = np.zeros(kept.shape)
    for i, temp in enumerate(temperatures):
        p_full = (logits / temp).softmax(dim=-1)                               # (n, V)
        probs[i] = p_full.gather(1, cand).numpy()
        for j, k in enumerate(top_ks):
            for m, p in enumerate(top_ps):
                filtered = sampling.apply_sampling_rules(logits, temp, top_k=k or None,
                                                         top_p=None if p == 1.0 else p)
                keep = torch.isfinite(filtered)                                # (n, V)
                counts = keep.sum(dim=-1)
                # 留下的总是排在最前面的那几个：按排序取前 counts 个，与 keep 完全一致
                prefix = torch.arange(V)[None, :] < counts[:, None]
                if not torch.equal(keep.gather(1, order), prefix):
                    raise RuntimeError("留下的候选不是打分最高的那几个（打分有并列？）。")
                kept[i, j, m] = counts.numpy()
                mass[i, j, m] = (p_full * keep).sum(dim=-1).numpy()
    return {
        "ids": ids[0].tolist(), "n_prompt": int(n_prompt), "cand_ids": cand.tolist(),
        "probs": probs, "kept": kept, "kept_mass": mass,
        "drawn_rank": [int(r) for r in rank.tolist()],
        "temperatures": temperatures, "top_ks": list(top_ks), "top_ps": [float(p) for p in top_ps],
        "generation": {"temperature": float(temperature), "top_k": top_k or 0,
                       "top_p": 1.0 if top_p is None else float(top_p), "seed": int(seed)},
    }


def _clean_tokens(tokens: list[str], clean_text) -> list[str]:
    """把 tokens 接成一整段交给 clean_text，再按原来的长度切回一个个 token。"""
    text = "".join(tokens)
    cleaned = clean_text(text)
    if not isinstance(cleaned, str) or len(cleaned) != len(text):
        raise ValueError("clean_text 应返回与输入等长的字符串（例如把词换成同样多个 ＊），"
                         f"输入 {len(text)} 个字符，返回的是 {cleaned!r:.40}。")
    out, start = [], 0
    for tok in tokens:
        out.append(cleaned[start:start + len(tok)])
        start += len(tok)
    return out


class SamplingExplorer(CourseWidget):
    """采样规则探索器。trace 来自 `trace_generation`；itos：id → 显示用的字符串（list 或函数）。

    初始视图：第 step 步，温度、top-k、top-p 为生成时用的设置（网格里最接近的值）。
    clean_text（可选）：显示之前作用在文字上、不改变长度的函数（如 `tfcourse.safety.mask_offensive`）：
    提示 + 生成的文字整段过一遍（跨 token 的词也遮得住），每个候选接在它那一步的前缀后面过一遍。
    """

    _esm = esm("sampling_explorer.js")

    tokens = t.List(t.Unicode()).tag(sync=True)                 # 提示 + 生成的每个 token 的显示串
    n_prompt = t.Int(1).tag(sync=True)
    cand_tokens = t.List(t.List(t.Unicode())).tag(sync=True)    # (n, n_top)
    probs = t.List(t.List(t.List(t.Float()))).tag(sync=True)    # (n_T, n, n_top)
    kept = t.List(t.List(t.List(t.List(t.Int())))).tag(sync=True)        # (n_T, n_k, n_p, n)
    kept_mass = t.List(t.List(t.List(t.List(t.Float())))).tag(sync=True)
    drawn_rank = t.List(t.Int()).tag(sync=True)
    temperatures = t.List(t.Float()).tag(sync=True)
    top_ks = t.List(t.Int()).tag(sync=True)
    top_ps = t.List(t.Float()).tag(sync=True)
    generation = t.Dict().tag(sync=True)
    step = t.Int(0).tag(sync=True)
    t_index = t.Int(0).tag(sync=True)
    k_index = t.Int(0).tag(sync=True)
    p_index = t.Int(0).tag(sync=True)

    def __init__(self, trace: dict, itos, *, step: int = 0, clean_text=None, **kwargs):
        needed = {"ids", "n_prompt", "cand_ids", "probs", "kept", "kept_mass", "drawn_rank",
                  "temperatures", "top_ks", "top_ps", "generation"}
        if not isinstance(trace, dict) or not needed <= set(trace):
            raise ValueError(f"trace 应为 trace_generation() 返回的字典（含 {sorted(needed)}）。")
        show = itos if callable(itos) else (lambda i: itos[i])
        tokens = [show(i) for i in trace["ids"]]
        cand_tokens = [[show(i) for i in row] for row in trace["cand_ids"]]
        if clean_text is not None:
            n_prompt = int(trace["n_prompt"])
            # 候选接在这一步的前缀后面再过一遍：与前缀连成一个词的候选也遮得住
            cand_tokens = [[_clean_tokens(tokens[:n_prompt + s] + [c], clean_text)[-1] for c in row]
                           for s, row in enumerate(cand_tokens)]
            tokens = _clean_tokens(tokens, clean_text)
        r5 = lambda a: np.round(np.asarray(a, dtype=float), 5).tolist()   # noqa: E731
        g = trace["generation"]
        super().__init__(
            tokens=tokens, n_prompt=int(trace["n_prompt"]),
            cand_tokens=cand_tokens,
            probs=r5(trace["probs"]), kept=np.asarray(trace["kept"], dtype=int).tolist(),
            kept_mass=r5(trace["kept_mass"]), drawn_rank=list(trace["drawn_rank"]),
            temperatures=list(trace["temperatures"]), top_ks=list(trace["top_ks"]),
            top_ps=list(trace["top_ps"]), generation=dict(g), **kwargs,
        )
        self.set(step=step, temperature=g["temperature"], top_k=g["top_k"], top_p=g["top_p"])

    @property
    def n_steps(self) -> int:
        return len(self.drawn_rank)

    @t.validate("step")
    def _clamp_step(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.drawn_rank) - 1, 0))

    @t.validate("t_index")
    def _clamp_t(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.temperatures) - 1, 0))

    @t.validate("k_index")
    def _clamp_k(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.top_ks) - 1, 0))

    @t.validate("p_index")
    def _clamp_p(self, proposal):
        return clamp(proposal["value"], 0, max(len(self.top_ps) - 1, 0))

    def set(self, step=None, temperature=None, top_k=None, top_p=None) -> "SamplingExplorer":
        """移到第 step 步；温度、top-k（0 = 不用）、top-p（1.0 = 不用）吸附到网格里最接近的值。返回自身。"""
        with self.hold_sync():
            if step is not None:
                self.step = int(step)
            if temperature is not None:
                self.t_index = _nearest(self.temperatures, float(temperature))
            if top_k is not None:
                self.k_index = _nearest(self.top_ks, int(top_k or 0))
            if top_p is not None:
                self.p_index = _nearest(self.top_ps, float(top_p))
        return self

    def readout(self) -> dict:
        """当前视图显示的内容：前缀、候选及其概率、留下几个、抽中的是谁。"""
        s, i, j, m = self.step, self.t_index, self.k_index, self.p_index
        n_kept = self.kept[i][j][m][s]
        return {
            "step": s, "prefix": "".join(self.tokens[: self.n_prompt + s]),
            "drawn": self.tokens[self.n_prompt + s], "drawn_rank": self.drawn_rank[s],
            "temperature": self.temperatures[i], "top_k": self.top_ks[j], "top_p": self.top_ps[m],
            "candidates": list(self.cand_tokens[s]), "probs": list(self.probs[i][s]),
            "n_kept": n_kept, "kept_mass": self.kept_mass[i][j][m][s],
            "n_kept_top_k": self.kept[i][j][0][s], "n_kept_top_p": self.kept[i][0][m][s],
        }
