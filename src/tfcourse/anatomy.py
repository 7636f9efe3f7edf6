"""Transformer 的解剖图：把 `model.Transformer` 拆成论文图 1 里的一个个方块，数参数、量形状。

第 6 章引入（编解码架构全景：base 模型的参数都花在哪里），第 9 章用它追踪读者自己模型里每一步的形状；
`widgets.ArchitectureMap` 把结果画成可点击的结构图。

每个方块是一个 dict：id、label、group（"encoder" / "decoder"）、kind（方块的种类，决定颜色）、repeat（层内方块为
n_layers，其余为 1）、params（一个实例的参数个数，从第 0 层的真实子模块数出来）、total_params（= params × repeat）、
shape（追踪到的输出形状，没追踪时为 ""）、detail（一句话说明）、name（它在模型里的模块路径）。
共享（绑定）的张量只在第一次出现的方块里计数，所以 Σ total_params == count_parameters(model)。
"""
from __future__ import annotations

import math

import torch

from .model import Transformer, count_parameters

__all__ = ["model_blocks"]

# 形状里每一维的名字（与全书的形状记号一致）：编码器一侧是源长度 S，解码器一侧是目标长度 T。
_ENC_DIMS, _DEC_DIMS, _LOGIT_DIMS = ("B", "S", "C"), ("B", "T", "C"), ("B", "T", "V")


def _format_shape(shape, dims) -> str:
    return "(" + ", ".join(f"{d}={n}" for d, n in zip(dims, shape)) + ")"


def _layer_blocks(side: str, c, prefix: str) -> list[tuple]:
    """一层里的方块，按数据流动的顺序：(id, 子模块路径, kind, label, detail)。"""
    C, H, D, F = c.d_model, c.n_heads, c.d_head, c.d_ff
    pre = c.norm_first
    residual = "，输出直接加回残差：x ← x + 子层(LN(x))（pre-LN 的残差相加）" if pre else ""
    attn_formula = f"Attention(Q, K, V) = softmax(QKᵀ/√d_k)V，{H} 个头各 d_k = {D} 维，q/k/v/out 四个 {C}×{C} 投影带偏置"
    ffn = ("ffn", "ffn", "前馈网络 FFN",
           f"逐位置前馈网络，每个位置各算各的：FFN(x) = max(0, xW₁ + b₁)W₂ + b₂，{C} → d_ff = {F} → {C}{residual}。")

    def norm(i: int, what: str):
        if pre:
            return ("norm", f"norm{i}", "LayerNorm（pre-LN：先归一化）",
                    f"pre-LN：先把{what}的输入做层归一化 LN(x)（每个位置在 C = {C} 维上减均值、除以标准差，"
                    f"再乘 γ、加 β，共 2 × {C} 个参数），子层的输出再加回没有归一化的 x。")
        return ("norm", f"norm{i}", "Add & Norm（残差 + 层归一化）",
                f"把{what}的输出加回它的输入，再做层归一化：x = LayerNorm(x + 子层(x))，每个位置在 C = {C} 维上"
                f"减均值、除以标准差，再乘 γ、加 β（共 2 × {C} 个参数）。")

    if side == "enc":
        subs = [
            [("attn", "self_attn", "多头自注意力 Multi-Head Attention",
              f"每个源位置以 Q = K = V = x 看全部源位置（填充位置被掩掉）：{attn_formula}{residual}。"),
             norm(1, "自注意力")],
            [ffn, norm(2, "前馈网络")],
        ]
    else:
        subs = [
            [("attn", "self_attn", "掩码多头自注意力 Masked Multi-Head Attention",
              f"目标序列的自注意力加上因果掩码：位置 t 只能看位置 0…t，训练时整句并行也偷看不到答案；{attn_formula}{residual}。"),
             norm(1, "掩码自注意力")],
            [("attn", "cross_attn", "交叉注意力 Cross-Attention",
              f"Q 来自解码器，K、V 来自编码器的输出 memory (B, S, C)：每个目标位置决定去看源句的哪些位置"
              f"（源的填充位置被掩掉）；{attn_formula}{residual}。"),
             norm(2, "交叉注意力")],
            [ffn, norm(3, "前馈网络")],
        ]
    out = []
    for sub, nrm in subs:
        pair = [nrm, sub] if pre else [sub, nrm]           # pre-LN：先归一化再进子层
        for kind, attr, label, detail in pair:
            out.append((f"{side}.{attr}", f"{prefix}.layers.0.{attr}", kind, label, detail))
    return out


def model_blocks(model, src: torch.Tensor | None = None, tgt: torch.Tensor | None = None) -> list[dict]:
    """把 Transformer 拆成方块（编码器在前、解码器在后，各自按数据自下而上流动的顺序）。

    给了 src (B, S) 与 tgt (B, T) 时，在 eval 模式、torch.no_grad() 下跑一次前向，用 forward hook 记下
    每个方块输出的形状（第 0 层）；不给则 shape 为 ""。模型的训练/评估状态与注意力权重在调用后恢复原样。
    """
    if not isinstance(model, Transformer):
        raise ValueError(f"model 应为 tfcourse.model.Transformer，实际得到 {type(model).__name__}。")
    if (src is None) != (tgt is None):
        raise ValueError("src 与 tgt 要么都给（追踪形状），要么都不给（只数参数）。")
    c = model.config
    C, V_src, V_tgt, N = c.d_model, c.src_vocab_size, c.tgt_vocab_size, c.n_layers
    shared = model.tgt_embed is model.src_embed
    tied = model.generator.weight is model.tgt_embed.weight
    scale = f"√{C} ≈ {math.sqrt(C):.1f}"
    pe_detail = (f"加上固定的正弦位置编码 PE(p, 2i) = sin(p / 10000^(2i/d_model))、PE(p, 2i+1) = cos(…)，"
                 f"告诉模型每个词在第几个位置；它是预先算好的表（buffer，最长 {c.max_len}），没有可学参数。")
    gen_detail = (f"把每个位置的 {C} 维向量投影成 {V_tgt} 个 logits（目标词表里每个词一个分数）：logits = xWᵀ；"
                  f"W 与目标词嵌入共用权重（tie_output=True，论文 3.4 节），不新增参数，也没有偏置。" if tied else
                  f"把每个位置的 {C} 维向量投影成 {V_tgt} 个 logits（目标词表里每个词一个分数）：logits = xWᵀ + b，"
                  f"W 是 {V_tgt}×{C}，另有 {V_tgt} 个偏置。")
    final_detail = ("{}栈最后再做一次 LayerNorm{}；论文图里的 post-LN 没有这一块，torch.nn.Transformer 总有，pre-LN 必需。")

    # (id, group, kind, repeat, 模块路径, label, detail)；模块路径为 None 的方块没有参数。
    spec = [
        ("src_embed", "encoder", "embed", 1, "src_embed", "输入词嵌入 Input Embedding ×√d_model",
         f"查表把每个源 token id 换成 {C} 维向量（词表 {V_src} × {C}），再乘 {scale}，让它与位置编码的量级相当。"),
        ("src_pos", "encoder", "pos", 1, None, "位置编码（正弦，无参数）Positional Encoding", pe_detail),
        *[(i, "encoder", k, N, p, lab, d) for i, p, k, lab, d in _layer_blocks("enc", c, "encoder")],
    ]
    if c.final_norm:
        spec.append(("enc.final_norm", "encoder", "norm", 1, "encoder.norm", "末尾 LayerNorm（编码器）",
                     final_detail.format("编码器", "，输出就是交给每个解码器层交叉注意力的 memory (B, S, C)")))
    spec += [
        ("tgt_embed", "decoder", "embed", 1, "tgt_embed", "目标词嵌入 Output Embedding ×√d_model",
         f"查表把每个目标 token id（右移一位，以 <bos> 开头）换成 {C} 维向量，再乘 {scale}；"
         + ("与源词嵌入共用同一张表（share_embeddings=True），不新增参数。" if shared else f"词表 {V_tgt} × {C}。")),
        ("tgt_pos", "decoder", "pos", 1, None, "位置编码（正弦，无参数）Positional Encoding", pe_detail),
        *[(i, "decoder", k, N, p, lab, d) for i, p, k, lab, d in _layer_blocks("dec", c, "decoder")],
    ]
    if c.final_norm:
        spec.append(("dec.final_norm", "decoder", "norm", 1, "decoder.norm", "末尾 LayerNorm（解码器）",
                     final_detail.format("解码器", "，之后才交给输出层")))
    spec += [
        ("generator", "decoder", "linear", 1, "generator", "输出层 Linear", gen_detail),
        ("softmax", "decoder", "softmax", 1, None, "Softmax",
         "把 logits 变成下一个词的概率分布 softmax(z)ᵢ = exp(zᵢ) / Σⱼ exp(zⱼ)；本课程的模型只输出 logits，"
         "softmax 在交叉熵损失（F.cross_entropy）或解码（tfcourse.decode）里才做，没有参数。"),
    ]

    modules = dict(model.named_modules(remove_duplicate=False))
    seen: set[int] = set()                                   # 已经计过数的张量（共享的只算第一次）
    blocks = []
    for bid, group, kind, repeat, path, label, detail in spec:
        params = 0                                           # 层内方块数第 0 层；其余各层结构相同（末尾核对总数）
        if path is not None:
            for p in modules[path].parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    params += p.numel()
        blocks.append({"id": bid, "label": label, "group": group, "kind": kind, "repeat": repeat,
                       "params": int(params), "total_params": int(params) * repeat, "shape": "",
                       "detail": detail, "name": "" if path is None else path})
    blocks[[b["id"] for b in blocks].index("src_pos")]["name"] = "pe（buffer）"
    blocks[[b["id"] for b in blocks].index("tgt_pos")]["name"] = "pe（buffer）"

    total = sum(b["total_params"] for b in blocks)
    if total != count_parameters(model):
        raise ValueError(f"方块的参数之和 {total:,} 与模型的参数总数 {count_parameters(model):,} 不符："
                         "模型的结构被改过（各层不再相同，或多了不在图里的子模块）。")
    if src is not None:
        _trace_shapes(model, src, tgt, blocks)
    return blocks


def _trace_shapes(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, blocks: list[dict]) -> None:
    """跑一次前向，把每个方块输出的形状写进 blocks[...]["shape"]。"""
    by_id = {b["id"]: b for b in blocks}
    shapes: dict[str, str] = {}

    def record(bid, dims):
        def hook(module, inputs, output):
            out = output[0] if isinstance(output, tuple) else output   # 注意力返回 (输出, 权重)
            shapes.setdefault(bid, _format_shape(out.shape, dims))
        return hook

    def embed_hook(module, inputs, output):                 # 共享词表时同一个模块被调用两次：看输入是谁
        if inputs[0] is src:
            shapes.setdefault("src_embed", _format_shape(output.shape, _ENC_DIMS))
        if inputs[0] is tgt:
            shapes.setdefault("tgt_embed", _format_shape(output.shape, _DEC_DIMS))

    def stack_input(bid, dims):                              # 栈的输入 = 词嵌入 ×√C + 位置编码
        def pre_hook(module, inputs):
            shapes.setdefault(bid, _format_shape(inputs[0].shape, dims))
        return pre_hook

    handles = [model.encoder.register_forward_pre_hook(stack_input("src_pos", _ENC_DIMS)),
               model.decoder.register_forward_pre_hook(stack_input("tgt_pos", _DEC_DIMS))]
    for table in {id(model.src_embed): model.src_embed, id(model.tgt_embed): model.tgt_embed}.values():
        handles.append(table.register_forward_hook(embed_hook))
    modules = dict(model.named_modules())
    for b in blocks:
        if b["kind"] in ("embed", "pos", "softmax"):
            continue
        dims = _LOGIT_DIMS if b["id"] == "generator" else _ENC_DIMS if b["group"] == "encoder" else _DEC_DIMS
        handles.append(modules[b["name"]].register_forward_hook(record(b["id"], dims)))

    was_training = model.training
    saved = [(layer, attr, getattr(layer, attr)) for stack, attrs in
             ((model.encoder, ("attn_weights",)), (model.decoder, ("self_attn_weights", "cross_attn_weights")))
             for layer in stack.layers for attr in attrs]
    try:
        model.eval()
        with torch.no_grad():
            model(src, tgt)                                  # 形状不对时，模型自己的检查抛出中文 ValueError
    finally:
        for hd in handles:
            hd.remove()
        model.train(was_training)
        for layer, attr, value in saved:                     # 不改动读者模型里上一次前向的注意力权重
            setattr(layer, attr, value)
    shapes["softmax"] = shapes.get("generator", "")          # softmax 不改变形状：(B, T, V) 的概率
    for bid, shape in shapes.items():
        by_id[bid]["shape"] = shape
