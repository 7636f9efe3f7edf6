"""在读者的浏览器里跑课程模型的小部件：读者自己的文字交给第 12–15 章训练的模型，不要 Python。

- `LiveModels`：这类小部件的 Python 一侧。本书网站上，前端从网站自己的文件取运行时（runtime.js）和权重；
  Jupyter / Colab / Binder 里没有网站，前端第一次要用模型时向 Python 要，这里回运行时的源码和 float16 权重。
- `MaskFiller`（第 12 章）：读者的句子，点一个字遮住，bert-zh 猜那里是什么；
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

__all__ = ["LiveModels", "MaskFiller", "ReviewAttention", "fill_candidates", "input_notes"]


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


def input_notes(text: str, limit: int, known) -> list[str]:
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
        notes.append(f"{shown}{f' 等 {len(unknown)} 个字' if len(unknown) > 6 else ''}不在字表里，模型看到的是 [UNK]。")
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
        from .. import webmodels

        if model not in self.MODELS:
            raise ValueError(f"ReviewAttention 只能用评论分类器 {'、'.join(self.MODELS)}，实际给了 {model!r}。")
        if not isinstance(text, str) or not text:
            raise ValueError(f"text 应为一条非空的评论（字符串），实际得到 {text!r}。")
        clf, vocab = webmodels.reference_model(model)
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

    from .. import webmodels

    model, vocab = webmodels.reference_model("bert-zh")
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
        from .. import webmodels
        from .._checks import positive_int

        if not isinstance(text, str) or not text:
            raise ValueError(f"text 应为一句非空的话（字符串），实际得到 {text!r}。")
        k = positive_int(k, "k")
        model, vocab = webmodels.reference_model("bert-zh")
        limit = model.config.max_len - 2
        top, p_orig, rank = fill_candidates(text, position, k)
        super().__init__(text=text, position=position, k=k, candidates=top, original_prob=p_orig, original_rank=rank,
                         live_limit=limit, live_notes=input_notes(text, limit, lambda c: c in vocab.stoi), title=title,
                         **kwargs)
        self._listen_for_model_requests()
