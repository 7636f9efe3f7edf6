"""把课程自己训练的模型导出给浏览器：网站上的 JavaScript 运行时（`_static/tfcourse/runtime.js`）读这些文件，
在读者的浏览器里、不要 Python，对读者自己输入的文字算 logits、接着写。

文件格式是 safetensors（8 字节的头长度、一段 JSON 头、原样的 float16 数据），头里的 `__metadata__` 记着
模型种类、超参数、字表和源检查点的 SHA-256。浏览器与 `reference_model` 都用这同一份 float16 权重、
按 float32 计算，所以两边的 logits 只差浮点舍入。

导出的模型（`make book` 时由网站扩展写进 `_static/tfcourse/models/`）：
- `gpt-zh`：第 13 章的中文 GPT；
- `gpt-zh-llama`：附录 A 换上今天的块（RMSNorm、RoPE、SwiGLU、GQA）的 gpt-zh（`llama.load_gpt_zh_llama()`）；
- `gpt-zh-ctrl`：第 15 章全部参数微调的那一份（`control.load_fine_tuned("full")`，认得控制 token <好评>、<差评>）；
- `bert-zh`：第 12 章的中文 BERT 连同它的掩码语言模型预测头（`BertForMaskedLM`）；
- `cls-bert`：第 14 章在 bert-zh 上微调的评论分类器（`classify.load_classifier("cls-bert")`）。
输出层与词向量表共享的那份权重（`lm_head.weight`、`decoder.weight`）只存一次：运行时直接用词向量表。
"""
from __future__ import annotations

import json
import pathlib
import struct

import torch

__all__ = ["MODELS", "RUNTIME", "export", "reference_model", "runtime_function", "show_runtime_source", "write_all",
           "write_site"]

RUNTIME = pathlib.Path(__file__).parent / "widgets" / "static" / "runtime.js"    # 浏览器运行时的唯一一份源码
MODELS = ("gpt-zh", "gpt-zh-ctrl", "gpt-zh-llama", "bert-zh", "cls-bert")
KINDS = {"gpt-zh": "gpt", "gpt-zh-ctrl": "gpt", "gpt-zh-llama": "llama", "bert-zh": "bert-mlm", "cls-bert": "bert-cls"}
TIED = {"lm_head.weight": "tok_emb.weight", "decoder.weight": "bert.tok_emb.weight"}   # 共享的输出层 -> 词向量表


def _check(name: str) -> str:
    if name not in MODELS:
        raise ValueError(f"没有可以导出给浏览器的模型 {name!r}；可选：{'、'.join(MODELS)}。")
    return name


def _load_bert_mlm():
    """第 12 章的 bert-zh：编码器 + 预测头（检查点里输出层只存了词向量表那一份）。"""
    from . import checkpoints
    from .bert import BertConfig, BertForMaskedLM
    from .tokenize.chars import CharVocab

    state, meta = checkpoints.load("bert-zh")
    state = {k: v.float() for k, v in state.items()}
    state["decoder.weight"] = state["bert.tok_emb.weight"]
    model = BertForMaskedLM(BertConfig(**meta["config"]))
    model.load_state_dict(state)
    return model.eval(), CharVocab.from_meta(meta["vocab"])


def _load(name: str):
    """(eval 模式的 torch 模型, 字表, 源检查点的 SHA-256, 运行时要的超参数)。"""
    from . import checkpoints, control
    from .classify import load_classifier
    from .gpt import load_gpt_zh

    _check(name)
    if KINDS[name] == "llama":
        from .llama import load_gpt_zh_llama

        model, vocab = load_gpt_zh_llama()
        c = model.config
        if c.qk_norm or not c.tie_embeddings:
            raise ValueError(f"{name} 的超参数与运行时的假定不符（没有 QK-norm、输出层共享词向量表）：{c}。")
        cfg = {"vocab_size": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads,
               "d_head": c.d_head, "n_layers": c.n_layers, "d_ff": c.d_ff, "max_len": c.max_len,
               "rope_base": c.rope_base, "eps": c.eps}
    elif KINDS[name] == "gpt":
        model, vocab = load_gpt_zh()
        if name == "gpt-zh-ctrl":
            model = control.load_fine_tuned("full")              # 同一张字表
        c = model.config
        cfg = {"vocab_size": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads, "n_layers": c.n_layers,
               "d_ff": c.d_ff, "max_len": c.max_len, "eps": 1e-5, "norm_first": True}
    else:
        if name == "bert-zh":
            model, vocab = _load_bert_mlm()
            max_len = model.config.max_len
        else:
            clf = load_classifier(name)
            model, vocab, max_len = clf.model, clf.encoder.vocab, clf.encoder.max_len
        c = model.bert.config if name == "cls-bert" else model.config
        if c.type_vocab_size < 1 or max_len > c.max_len:
            raise ValueError(f"{name} 的超参数与运行时的假定不符：{c}。")
        cfg = {"vocab_size": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads, "n_layers": c.n_layers,
               "d_ff": c.d_ff, "max_len": max_len, "eps": c.layer_norm_eps, "norm_first": False}
        if name == "cls-bert" and model.pool != "mean":
            raise ValueError(f"cls-bert 的池化是 {model.pool!r}，运行时只实现了平均池化（mean）。")
    state = model.state_dict()
    for tied, source in TIED.items():
        if tied in state and state[tied].data_ptr() != state[source].data_ptr():
            raise ValueError(f"{name} 的 {tied} 不再与词向量表共享权重，运行时假定两者是同一份。")
    return model, vocab, checkpoints.manifest()[name]["sha256"], cfg


def _tensors(model) -> dict[str, torch.Tensor]:
    """要导出的权重（共享的输出层只存一份：它就是词向量表）。"""
    return {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items() if k not in TIED}


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
    model, vocab, sha, cfg = _load(name)
    meta = {"model": name, "kind": KINDS[name], "source_sha256": sha, "config": json.dumps(cfg),
            "vocab": json.dumps({"itos": list(vocab.itos), "unk_id": vocab.unk_id}, ensure_ascii=False)}
    if KINDS[name] in ("gpt", "llama"):       # 生成的字显示之前先遮住侮辱性的词（tfcourse.safety 的词表）
        from .widgets.live import offensive_rules

        meta["offensive"] = json.dumps(offensive_rules(), ensure_ascii=False)
    return _safetensors(_tensors(model), meta)


def reference_model(name: str):
    """浏览器算的那个模型：权重先舍入到 float16 再转回 float32（torch 这一边的对照）。
    gpt-zh、gpt-zh-ctrl、gpt-zh-llama、bert-zh 返回 (模型, 字表)；cls-bert 返回 (ReviewClassifier, 字表)。"""
    model, vocab, _, _ = _load(name)
    rounded = {k: v.float() for k, v in _tensors(model).items()}
    for tied, source in TIED.items():
        if tied in model.state_dict():
            rounded[tied] = rounded[source]
    model.load_state_dict(rounded)
    model.eval()
    if name == "cls-bert":
        from .classify import load_classifier

        clf = load_classifier(name)
        clf.model = model
        return clf, vocab
    return model, vocab


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


def write_site(static_dir) -> list[pathlib.Path]:
    """网站要的全部文件：运行时 `static_dir/runtime.js` 与 `static_dir/models/` 里的权重（内容没变的不重写）。"""
    static_dir = pathlib.Path(static_dir)
    static_dir.mkdir(parents=True, exist_ok=True)
    runtime = static_dir / "runtime.js"
    if not runtime.exists() or runtime.read_bytes() != RUNTIME.read_bytes():
        runtime.write_bytes(RUNTIME.read_bytes())
    return [runtime, *write_all(static_dir / "models")]


def runtime_function(name: str) -> str:
    """runtime.js 里函数 name 的源码（连同它上面紧挨着的注释）：第 13 章把它与 Python 的那一个并排放。"""
    lines = RUNTIME.read_text(encoding="utf-8").splitlines()
    head = f"export function {name}("
    starts = [i for i, ln in enumerate(lines) if ln.startswith(head)]
    if len(starts) != 1:
        raise ValueError(f"runtime.js 里没有（或不止一个）名为 {name!r} 的导出函数。")
    first = last = starts[0]
    while first > 0 and lines[first - 1].startswith("//"):
        first -= 1
    while lines[last] != "}":
        last += 1
    return "\n".join(lines[first:last + 1]) + "\n"


def show_runtime_source(name: str) -> None:
    """在笔记本里把 runtime.js 里函数 name 的源码显示成 JavaScript 代码块（所在单元加标签 remove-input）。"""
    from IPython.display import Markdown, display

    display(Markdown("```javascript\n" + runtime_function(name) + "```"))
