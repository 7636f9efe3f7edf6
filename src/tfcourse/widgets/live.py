"""在读者的浏览器里跑课程模型的小部件：读者自己的文字交给第 12–15 章训练的模型，不要 Python。

- `LiveModels`：这类小部件的 Python 一侧。本书网站上，前端从网站自己的文件取运行时（runtime.js）和权重；
  Jupyter / Colab / Binder 里没有网站，前端第一次要用模型时向 Python 要，这里回运行时的源码和 float16 权重。
- `MaskFiller`（第 12 章）：读者的句子，点一个字遮住，bert-zh 猜那里是什么；
- `LiveGeneration`（第 13、15 章）：读者的开头，gpt-zh（或带控制 token 的 gpt-zh-ctrl）接着写，一步一步看候选；
- `SentenceHeads`（第 4 章）：读者的一句话 → bert-zh 每层每个头的注意力；
- `ReviewAttention`（第 14 章）：读者的评论 → cls-bert 的好评概率与最后一层的注意力。

打开时的视图由 Python 用浏览器那一份 float16 权重（`tfcourse.webmodels.reference_model`）算好，
网页打开时不下载任何权重；读者一改文字，浏览器里的运行时重算。
这个模块不由 `tfcourse.widgets` 自动导入：它要用到检查点与分类器，只有用它的章节才付这份代价。
"""
from __future__ import annotations

import functools

import traitlets as t

from ._base import CourseWidget, esm
from .heatmap import AttentionHeatmap, head_maps

__all__ = ["LiveGeneration", "LiveModels", "MaskFiller", "ReviewAttention", "SentenceHeads", "fill_candidates",
           "generation_steps", "input_notes", "mulberry32", "sentence_heads"]


@functools.lru_cache(maxsize=None)
def _reference(name: str):
    """webmodels.reference_model(name)，每个模型只载入一次：小部件只读它（评估模式、不求梯度），从不改它。"""
    from .. import webmodels

    return webmodels.reference_model(name)


@functools.lru_cache(maxsize=None)
def _exported(name: str) -> bytes:
    from .. import webmodels

    return webmodels.export(name)


class LiveModels:
    """在浏览器里跑课程模型的小部件的 Python 一侧。

    本书网站上，前端从网站自己的文件取运行时和权重；Jupyter / Colab / Binder 里没有网站，前端第一次要用模型时
    （_live.js 的 courseModel）发来 {"tfcourse_request": "model", "name": ...}，这里回运行时的源码，
    float16 权重（与网站上的文件逐字节相同）作为二进制附件。笔记本保存的小部件状态里没有权重：
    只有读者真的改了文字才传。"""

    def _listen_for_model_requests(self):
        self.on_msg(self._answer_model_request)

    def _answer_model_request(self, widget, content, buffers):
        if not isinstance(content, dict) or content.get("tfcourse_request") != "model":
            return
        name = content.get("name")
        from .. import webmodels

        if name not in webmodels.MODELS:
            self.send({"tfcourse_model": name, "error": f"没有可以在浏览器里运行的模型 {name!r}；可选：{'、'.join(webmodels.MODELS)}。"})
            return
        self.send({"tfcourse_model": name, "runtime": webmodels.RUNTIME.read_text(encoding="utf-8")},
                  buffers=[_exported(name)])


def input_notes(text: str, limit: int, known, unk: str = "[UNK]") -> list[str]:
    """读者的文字在模型眼里缺了什么：超出 limit 个字的部分没有读、字表外的字成了 [UNK]。
    与 _live.js 的 describeInput 逐字相同（浏览器测试核对两边）。known(ch) -> 这个字在不在字表里。"""
    chars = list(text)
    kept = chars[:limit]
    unknown = list(dict.fromkeys(c for c in kept if not known(c)))
    notes = []
    if len(chars) > limit:
        notes.append(f"模型只读前 {limit} 个字：从第 {limit + 1} 个字「{chars[limit]}」起没有读。")
    if unknown:
        shown = "".join(f"「{c}」" for c in unknown[:6])
        notes.append(f"{shown}{f' 等 {len(unknown)} 个字' if len(unknown) > 6 else ''}不在字表里，模型看到的是 {unk}。")
    return notes


class ReviewAttention(LiveModels, AttentionHeatmap):
    """读者自己的评论 → 第 14 章的 cls-bert：好评的概率，和最后一层的注意力（一个头一张图，外加各头平均）。

    打开时显示 text 的结果，由 Python 用浏览器那一份 float16 权重算好（网页打开时什么都不下载）；读者一改文字，
    模型就在浏览器里重算（网站上取网站自己的权重文件，笔记本里向 Python 要，见 LiveModels）。
    改过之后 Python 里读得到：.live_text、.live_prob（好评的概率）、.weights 等。
    """

    _esm = esm("heatmap.js", live=True)

    live_model = t.Unicode("cls-bert").tag(sync=True)
    live_text = t.Unicode("").tag(sync=True)
    live_prob = t.Float(0.5).tag(sync=True)                     # 好评的概率
    live_limit = t.Int(126).tag(sync=True)                      # 模型读的字数（[CLS]、[SEP] 之外）
    live_notes = t.List(t.Unicode()).tag(sync=True)             # 截断、字表外的字

    MODELS = ("cls-bert",)

    def __init__(self, text: str, model: str = "cls-bert", *, title: str = "", **kwargs):
        if model not in self.MODELS:
            raise ValueError(f"ReviewAttention 只能用评论分类器 {'、'.join(self.MODELS)}，实际给了 {model!r}。")
        if not isinstance(text, str) or not text:
            raise ValueError(f"text 应为一条非空的评论（字符串），实际得到 {text!r}。")
        clf, vocab = _reference(model)
        att = clf.attention(text)
        labels, maps = head_maps(att["weights"])
        tokens = att["tokens"]
        limit = clf.encoder.max_len - 2
        super().__init__(maps, [["（平均）"] + tokens] * len(maps), [tokens] * len(maps), labels=labels, title=title,
                         selected=(0, None), live_model=model, live_text=text, live_prob=att["p_positive"],
                         live_limit=limit, live_notes=input_notes(text, limit, lambda c: c in vocab.stoi), **kwargs)
        self._listen_for_model_requests()


def fill_candidates(text: str, position: int, k: int = 5):
    """第 12 章的填空，用浏览器那一份 bert-zh：把 text 的第 position 个字（前 max_len − 2 个字之内）换成 [MASK]，
    → (最可能的 k 个 (字, 概率), 原字的概率, 原字的名次（从 0 数；原字不在字表里时为 −1）)。MaskFiller 打开时的视图。"""
    import torch

    model, vocab = _reference("bert-zh")
    chars = list(text)[:model.config.max_len - 2]
    if not chars:
        raise ValueError("text 至少要有一个字。")
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(chars):
        raise ValueError(f"position 应是 0 到 {len(chars) - 1} 之间的整数（第几个字，从 0 数），实际为 {position!r}。")
    ids = [vocab.id("[CLS]")] + vocab.encode("".join(chars)) + [vocab.id("[SEP]")]
    original = ids[1 + position]
    ids[1 + position] = vocab.id("[MASK]")
    with torch.no_grad():
        p = model(torch.tensor([ids]))[0, 1 + position].softmax(-1)       # (V,)
    order = sorted(range(len(p)), key=lambda i: (-float(p[i]), i))
    known = chars[position] in vocab.stoi
    top = [(vocab.itos[i], float(p[i])) for i in order[:k]]
    return top, (float(p[original]) if known else 0.0), (order.index(original) if known else -1)


class MaskFiller(LiveModels, CourseWidget):
    """读者的句子，点一个字把它遮住，看第 12 章的 bert-zh 在那里猜什么（最可能的 k 个字和概率）。

    打开时遮住 text 的第 position 个字（从 0 数），候选由 Python 用浏览器那一份权重算好；读者改了句子或点了
    别的字，模型在浏览器里重算。Python 里读得到 .text、.position、.candidates（[(字, 概率), ...]）。
    """

    _esm = esm("mask_filler.js", live=True)

    live_model = t.Unicode("bert-zh").tag(sync=True)
    text = t.Unicode("").tag(sync=True)
    position = t.Int(0).tag(sync=True)
    k = t.Int(5).tag(sync=True)
    candidates = t.List(t.Tuple(t.Unicode(), t.Float())).tag(sync=True)
    original_prob = t.Float(0.0).tag(sync=True)
    original_rank = t.Int(-1).tag(sync=True)
    live_limit = t.Int(126).tag(sync=True)
    live_notes = t.List(t.Unicode()).tag(sync=True)
    title = t.Unicode("").tag(sync=True)

    def __init__(self, text: str, position: int, *, k: int = 5, title: str = "", **kwargs):
        from .._checks import positive_int

        if not isinstance(text, str) or not text:
            raise ValueError(f"text 应为一句非空的话（字符串），实际得到 {text!r}。")
        k = positive_int(k, "k")
        model, vocab = _reference("bert-zh")
        limit = model.config.max_len - 2
        top, p_orig, rank = fill_candidates(text, position, k)
        super().__init__(text=text, position=position, k=k, candidates=top, original_prob=p_orig, original_rank=rank,
                         live_limit=limit, live_notes=input_notes(text, limit, lambda c: c in vocab.stoi), title=title,
                         **kwargs)
        self._listen_for_model_requests()


# ---------------------------------------------------------------------------
# 接着写：第 13 章（gpt-zh）与第 15 章（gpt-zh-ctrl，控制 token 与无分类器引导）
# ---------------------------------------------------------------------------

def mulberry32(seed: int):
    """与 runtime.js 相同的小随机数发生器：同一个种子，Python 与浏览器得到同一串 [0, 1) 之间的数。"""
    a = int(seed) & 0xFFFFFFFF
    M = 0xFFFFFFFF

    def imul(x, y):
        return (x * y) & M

    def rand() -> float:
        nonlocal a
        a = (a + 0x6D2B79F5) & M
        t = a
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & M
        return ((t ^ (t >> 14)) & M) / 4294967296

    return rand


def offensive_rules() -> list[dict]:
    """tfcourse.safety 的词表，写成浏览器的正则表达式（源码与标志）：生成的字在浏览器里也先遮住再显示。
    整条包在 (?i:…) 里的写成 i 标志（浏览器的正则不都认这种写法）。"""
    from ..safety import offensive_patterns

    out = []
    for p in offensive_patterns():
        src, flags = p.pattern, "gu"
        if src.startswith("(?i:") and src.endswith(")"):
            src, flags = src[4:-1], "giu"
        out.append({"source": src, "flags": flags})
    return out


GEN_MODELS = ("gpt-zh", "gpt-zh-ctrl")
GEN_TOP = 10                                   # 每一步列出打分最高的几个候选


def generation_steps(name: str, prompt: str, *, n_new: int = 24, temperature: float = 0.0, top_k: int = 0,
                     top_p: float = 1.0, seed: int = 0, label: int | None = None, guidance: float = 1.0) -> dict:
    """读者的开头交给 gpt-zh（或带控制 token 的 gpt-zh-ctrl）接着写，每一步记下候选——LiveGeneration 打开时的视图；
    浏览器里的 generation.js 一步一步做同样的事（同一份 float16 权重、同一个随机数发生器），测试逐 token 核对。

    输入是 ⏎（第 13 章每段的开头）[+ <好评>/<差评>] + 开头的字；字表外的字是 □，□ 和控制 token 从不写出。
    temperature = 0 是贪心；top_k = 0、top_p = 1 是不用；写到 ⏎（这段评论写完了）或 n_new 个字为止。
    guidance > 1（要有 label）：无分类器引导，反面提示是相反的控制 token（第 15 章）。
    返回 {"prompt_ids", "ids"（写出的）, "steps": [{"top": [[id, 概率], …], "kept": 留下几个, "rank": 写出的字排第几,
    "drawn_p": 写出的字的概率}], "ended"}。
    概率是这个温度下（贪心时按温度 1）整张字表上的 softmax；"留下"是温度、top-k、top-p 都用过之后还在的候选数。"""
    import numpy as np
    import torch

    from .. import control
    from ..sampling import apply_sampling_rules

    if name not in GEN_MODELS:
        raise ValueError(f"接着写只能用 {'、'.join(GEN_MODELS)}，实际给了 {name!r}。")
    if (label is not None or guidance != 1.0) and name != "gpt-zh-ctrl":
        raise ValueError("控制 token 与引导只有 gpt-zh-ctrl 认得（第 15 章）。")
    if guidance != 1.0 and label is None:
        raise ValueError("guidance ≠ 1 要有一个要求（label 为 1 或 0）：引导是远离相反的那个控制 token。")
    model, vocab = _reference(name)
    prefix = [control.SEP] + ([] if label is None else [vocab.id(control.CONTROL_TOKENS[int(label)])])
    neg = None if guidance == 1.0 else [control.SEP, vocab.id(control.CONTROL_TOKENS[1 - int(label)])]
    limit = model.config.max_len - n_new - len(prefix)
    prompt_ids = prefix + vocab.encode("".join(list(prompt)[:limit]))
    never = [vocab.unk_id] + [vocab.id(t) for t in control.CONTROL_TOKENS.values()]
    rand = mulberry32(seed)
    out, steps = [], []
    cache = model.new_cache()                              # 与 gpt.generate、浏览器一样用 KV 缓存：每步只送新的字
    neg_cache = None if neg is None else model.new_cache()
    step, neg_step = prompt_ids, None if neg is None else neg + prompt_ids[len(prefix):]
    for _ in range(n_new):
        with torch.no_grad():
            c = model(torch.tensor([step]), cache, last_only=True)[0, -1]
            if neg is not None:
                u = model(torch.tensor([neg_step]), neg_cache, last_only=True)[0, -1]
                c = u + guidance * (c - u)
        c[never] = -float("inf")
        logits = c.numpy().astype(np.float64)
        order = sorted(np.flatnonzero(np.isfinite(logits)).tolist(), key=lambda i: (-logits[i], i))
        shown_t = temperature if temperature > 0 else 1.0
        z = np.exp((logits[order] - logits[order[0]]) / shown_t)
        probs = dict(zip(order, (z / z.sum()).tolist()))
        if temperature == 0:
            nxt, kept = order[0], 1
        else:
            p = apply_sampling_rules(c[None], temperature, top_k or None, top_p if top_p < 1 else None).softmax(-1)[0]
            keep = [i for i in order if p[i] > 0]
            weights = [float(p[i]) for i in keep]
            r, j = rand(), 0
            while j < len(keep) - 1 and r >= weights[j]:
                r -= weights[j]
                j += 1
            nxt, kept = keep[j], len(keep)
        steps.append({"top": [[i, probs[i]] for i in order[:GEN_TOP]], "kept": kept, "rank": order.index(nxt),
                      "drawn_p": probs[nxt]})
        out.append(nxt)
        step = neg_step = [nxt]
        if nxt == control.SEP:
            break
    return {"prompt_ids": prompt_ids, "ids": out, "steps": steps, "ended": bool(out) and out[-1] == control.SEP}


def _display(vocab, prompt_ids, ids) -> tuple[list[str], list[str]]:
    """(开头显示成的字, 写出的字)：写出的字先遮住侮辱性的词（连同开头一起查，跨界的词也遮住）。"""
    from ..safety import mask_offensive

    shown = [vocab.itos[i] for i in prompt_ids]                    # 逐个 id 查字表（⏎ 也照样显示）
    written = list(mask_offensive("".join(shown) + "".join(vocab.itos[i] for i in ids)))[len(shown):]
    return shown, written


class LiveGeneration(LiveModels, CourseWidget):
    """读者的开头，课程的 GPT 接着写，一步一步看每一步的候选（第 13 章 gpt-zh）；
    model="gpt-zh-ctrl" 时再加上控制 token（好评 / 差评）与无分类器引导的强度 γ（第 15 章）。

    打开时的结果由 Python 算好（`generation_steps`，网页打开时不下载权重）；读者一改开头或滑块，
    模型就在浏览器里重写——同一份 float16 权重、同一个随机数发生器，同样的设置得到同样的字。
    写出的字显示之前先遮住侮辱性的词（tfcourse.safety）。Python 里读得到 .prompt、.tokens、.steps 与各个设置。
    """

    _esm = esm("generation.js", live=True)

    live_model = t.Unicode("gpt-zh").tag(sync=True)
    prompt = t.Unicode("").tag(sync=True)
    n_new = t.Int(24).tag(sync=True)
    temperature = t.Float(0.0).tag(sync=True)
    top_k = t.Int(0).tag(sync=True)
    top_p = t.Float(1.0).tag(sync=True)
    seed = t.Int(0).tag(sync=True)
    label = t.Int(1).tag(sync=True)
    guidance = t.Float(1.0).tag(sync=True)
    step = t.Int(0).tag(sync=True)
    prompt_tokens = t.List(t.Unicode()).tag(sync=True)
    tokens = t.List(t.Unicode()).tag(sync=True)
    steps = t.List(t.Dict()).tag(sync=True)
    ended = t.Bool(False).tag(sync=True)
    live_notes = t.List(t.Unicode()).tag(sync=True)
    title = t.Unicode("").tag(sync=True)

    def __init__(self, prompt: str, model: str = "gpt-zh", *, n_new: int = 24, temperature: float = 0.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int = 0, label: int = 1, guidance: float = 1.0,
                 step: int = 0, title: str = "", **kwargs):
        from .._checks import positive_int

        if model not in GEN_MODELS:
            raise ValueError(f"LiveGeneration 只能用 {'、'.join(GEN_MODELS)}，实际给了 {model!r}。")
        if not isinstance(prompt, str):
            raise ValueError(f"prompt 应为字符串（可以是空的），实际得到 {type(prompt).__name__}。")
        n_new = positive_int(n_new, "n_new")
        if not 0.0 <= float(temperature) <= 2.0 or not 0 <= int(top_k) <= 50 or not 0.5 <= float(top_p) <= 1.0:
            raise ValueError(f"temperature 应在 0–2、top_k 在 0–50、top_p 在 0.5–1 之间（滑块的范围），"
                             f"实际为 {temperature}、{top_k}、{top_p}。")
        if label not in (0, 1) or not 1.0 <= float(guidance) <= 5.0:
            raise ValueError(f"label 应为 1（好评）或 0（差评），guidance 在 1–5 之间，实际为 {label!r}、{guidance!r}。")
        ctrl = model == "gpt-zh-ctrl"
        run = generation_steps(model, prompt, n_new=n_new, temperature=float(temperature), top_k=int(top_k),
                               top_p=float(top_p), seed=int(seed), label=label if ctrl else None,
                               guidance=float(guidance) if ctrl else 1.0)
        _, vocab = _reference(model)
        shown, written = _display(vocab, run["prompt_ids"][2 if ctrl else 1:], run["ids"])
        steps = [{"top": [[vocab.itos[i], p] for i, p in s["top"]], "kept": s["kept"], "rank": s["rank"],
                  "drawn_p": s["drawn_p"]} for s in run["steps"]]
        limit = _reference(model)[0].config.max_len - n_new - (2 if ctrl else 1)
        super().__init__(live_model=model, prompt=prompt, n_new=n_new, temperature=float(temperature), top_k=int(top_k),
                         top_p=float(top_p), seed=int(seed), label=label, guidance=float(guidance),
                         step=max(0, min(int(step), len(written) - 1)), prompt_tokens=shown, tokens=written,
                         steps=steps, ended=run["ended"], title=title,
                         live_notes=input_notes(prompt, limit, lambda c: c in vocab.stoi, unk="□"), **kwargs)
        self._listen_for_model_requests()


def sentence_heads(text: str) -> dict:
    """bert-zh 读一句话（[CLS] + 前 max_len − 2 个字 + [SEP]），每层每个头的注意力：
    {"tokens": [...], "weights": (L, H, T, T) 数组}。SentenceHeads 打开时的视图；浏览器里的 attention(text) 算同样的数。"""
    import torch

    if not isinstance(text, str) or not text:
        raise ValueError(f"text 应为一句非空的话（字符串），实际得到 {text!r}。")
    model, vocab = _reference("bert-zh")
    chars = list(text)[:model.config.max_len - 2]
    ids = [vocab.id("[CLS]")] + vocab.encode("".join(chars)) + [vocab.id("[SEP]")]
    with torch.no_grad():
        model.bert(torch.tensor([ids]))
    return {"tokens": [vocab.itos[i] for i in ids], "weights": model.bert.attention_weights()[:, 0].numpy()}


class SentenceHeads(LiveModels, AttentionHeatmap):
    """读者自己的一句话 → 第 12 章的 bert-zh 每层每个头的注意力（第 4 章：真模型里的头各看什么）。

    打开时显示 text、第 map_index 张图（第 l 层第 h 头是第 l·H + h 张），由 Python 用浏览器那一份权重算好；
    读者一改句子，模型就在浏览器里重读。Python 里读得到 .live_text、.weights 等。"""

    _esm = esm("heatmap.js", live=True)

    live_model = t.Unicode("bert-zh").tag(sync=True)
    live_text = t.Unicode("").tag(sync=True)
    live_prob = t.Float(-1.0).tag(sync=True)                    # 没有概率（只有分类器才有）
    live_limit = t.Int(126).tag(sync=True)
    live_notes = t.List(t.Unicode()).tag(sync=True)

    def __init__(self, text: str, *, map_index: int = 0, selected=None, title: str = "", **kwargs):
        att = sentence_heads(text)
        w = att["weights"]                                       # (L, H, T, T)
        model, vocab = _reference("bert-zh")
        limit = model.config.max_len - 2
        super().__init__(w, att["tokens"], title=title, live_text=text, live_limit=limit,
                         live_notes=input_notes(text, limit, lambda c: c in vocab.stoi), **kwargs)
        self.select(*(selected or (1, None)), map_index=map_index)
        self._listen_for_model_requests()
