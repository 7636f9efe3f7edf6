"""gpt-zh-llama：gpt-zh 换上今天的块（附录 A）——RMSNorm、RoPE、SwiGLU、分组查询注意力（4 个查询头、2 组键值）。

与 gpt-zh 一样的语料、字表（训练集最常见的 4,000 个字 + 4 个特殊 token）、步数、批大小、窗口（64 个字）、
学习率与预热、dropout 0.1、挑验证损失最低的一步、float16 存储：训练过程就是 gpt_zh.train_char_lm，只换了模型。
尺寸：d_model 128、2 层，SwiGLU 的宽度 swiglu_hidden(128) = 384（8/3·d 取整到 64 的倍数），
参数量比 gpt-zh 少约 1%（没有位置向量表、没有偏置；GQA 省下的键值投影让给了前馈层）。
存下的 config 里 max_len = 256：RoPE 没有位置表，附录 A 用它量"读过训练窗口之后"的困惑度。
"""
from __future__ import annotations

from ckpt_jobs.gpt_zh import train_char_lm

NAME = "gpt-zh-llama"
NEEDS = ()


def build():
    from tfcourse.llama import GPT_ZH_LLAMA, LlamaConfig, LlamaGPT

    state, meta = train_char_lm(lambda **kw: LlamaGPT(LlamaConfig(**kw)), GPT_ZH_LLAMA, label="LlamaGPT")
    meta["arch"] = "llama"
    return state, meta
