"""把课程自己训练的模型导出给浏览器：网站上的 JavaScript 运行时（`_static/tfcourse/runtime.js`）读这些文件，
在读者的浏览器里、不要 Python，对读者自己输入的文字算 logits、接着写。

文件格式是 safetensors（8 字节的头长度、一段 JSON 头、原样的 float16 数据），头里的 `__metadata__` 记着
模型种类、超参数、字表和源检查点的 SHA-256。浏览器与 `reference_model` 都用这同一份 float16 权重、
按 float32 计算，所以两边的 logits 只差浮点舍入。

现在导出的模型：`gpt-zh`（第 13 章的中文 GPT）与 `gpt-zh-ctrl`（第 15 章全部参数微调的那一份，
`control.load_fine_tuned("full")`，认得控制 token <好评>、<差评>）。`make book` 时由网站扩展写进 `_static/tfcourse/models/`。
"""
from __future__ import annotations

import json
import pathlib
import struct

import torch

__all__ = ["MODELS", "export", "reference_model", "write_all"]

MODELS = ("gpt-zh", "gpt-zh-ctrl")
KINDS = {"gpt-zh": "gpt", "gpt-zh-ctrl": "gpt"}


def _check(name: str) -> str:
    if name not in MODELS:
        raise ValueError(f"没有可以导出给浏览器的模型 {name!r}；可选：{'、'.join(MODELS)}。")
    return name


def _load(name: str):
    """(eval 模式的 torch 模型, 字表, 源检查点的 SHA-256)。"""
    from . import checkpoints, control
    from .gpt import load_gpt_zh

    _check(name)
    model, vocab = load_gpt_zh()
    if name == "gpt-zh-ctrl":
        model = control.load_fine_tuned("full")              # 同一张字表
    if model.lm_head.weight.data_ptr() != model.tok_emb.weight.data_ptr():
        raise ValueError(f"{name} 的输出层不再与词向量表共享权重，运行时假定两者是同一份。")
    return model, vocab, checkpoints.manifest()[name]["sha256"]


def _tensors(model) -> dict[str, torch.Tensor]:
    """要导出的权重（共享的输出层只存一份：它就是 tok_emb.weight）。"""
    return {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()
            if k != "lm_head.weight"}


def _safetensors(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> bytes:
    """safetensors 的字节串，写法固定（名字排序、头用空格补齐到 8 字节）：同样的权重总得到同样的文件。
    （safetensors 包自己的 save 每次写出的头顺序不同，网站的构建因此不可复现；读回由测试交给它核对。）"""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        data = tensors[name].numpy().tobytes()
        header[name] = {"dtype": "F16", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def export(name: str) -> bytes:
    """模型 name 的 safetensors 字节串（float16 权重 + 元数据）。"""
    model, vocab, sha = _load(name)
    c = model.config
    meta = {"model": name, "kind": KINDS[name], "source_sha256": sha,
            "config": json.dumps({"vocab_size": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads,
                                  "n_layers": c.n_layers, "d_ff": c.d_ff, "max_len": c.max_len,
                                  "eps": 1e-5}),
            "vocab": json.dumps({"itos": list(vocab.itos), "unk_id": vocab.unk_id}, ensure_ascii=False)}
    return _safetensors(_tensors(model), meta)


def reference_model(name: str):
    """浏览器算的那个模型：权重先舍入到 float16 再转回 float32（torch 这一边的对照）。返回 (模型, 字表)。"""
    model, vocab, _ = _load(name)
    rounded = {k: v.float() for k, v in _tensors(model).items()}
    rounded["lm_head.weight"] = rounded["tok_emb.weight"]
    model.load_state_dict(rounded)
    return model.eval(), vocab


def write_all(directory) -> list[pathlib.Path]:
    """把全部模型写进 directory（网站的 `_static/tfcourse/models/`），内容没变的文件不重写。"""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name in MODELS:
        path = directory / f"{name}.safetensors"
        data = export(name)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        out.append(path)
    return out
