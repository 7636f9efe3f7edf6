"""第 1 章训练对照用的三个小"阅读器"：读完一句话，在最后一个位置给出答案。

- `RecurrentReader(cell="rnn")`：tanh RNN，一步一步读，最后的隐藏状态接分类器；
- `RecurrentReader(cell="gru")`：GRU（上一个系列的主角），同样串行；
- `AttentionReader`：最后一个位置当查询，直接对全句所有位置做注意力（带可学习的位置向量）。

注意力阅读器在第 1 章只当作"预告"使用；它里面的 Q/K/V 投影与缩放点积
（`tfcourse.attention.scaled_dot_product_attention`），第 2、3 章会一步步亲手写出来。
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import positive_int
from .attention import scaled_dot_product_attention
from .positional import LearnedPositionalEmbedding

__all__ = ["RecurrentReader", "AttentionReader"]


def _check_tokens(x: torch.Tensor, vocab_size: int, max_len: int | None = None) -> None:
    if not isinstance(x, torch.Tensor) or x.dtype != torch.long or x.dim() != 2:
        got = f"{type(x).__name__}" if not isinstance(x, torch.Tensor) else f"dtype={x.dtype}，形状 {tuple(x.shape)}"
        raise ValueError(f"输入应为形状 (B, T) 的 int64 词编号张量，实际得到 {got}。")
    if x.numel() and (x.min() < 0 or x.max() >= vocab_size):
        raise ValueError(f"词编号应在 [0, {vocab_size - 1}] 之内，实际范围是 [{int(x.min())}, {int(x.max())}]。")
    if max_len is not None and x.shape[1] > max_len:
        raise ValueError(f"序列长度应不超过 max_len={max_len}，实际为 {x.shape[1]}。")


class RecurrentReader(nn.Module):
    """嵌入 → RNN/GRU（串行读完整句）→ 最后一步的隐藏状态 → 线性分类器。"""

    def __init__(self, vocab_size: int, n_classes: int, d_model: int = 32, cell: str = "rnn"):
        super().__init__()
        if cell not in ("rnn", "gru"):
            raise ValueError(f"cell 应为 'rnn' 或 'gru'，实际为 {cell!r}。")
        self.vocab_size = positive_int(vocab_size, "vocab_size")
        self.embed = nn.Embedding(vocab_size, positive_int(d_model, "d_model"))
        self.cell = (nn.RNN if cell == "rnn" else nn.GRU)(d_model, d_model, batch_first=True)
        self.head = nn.Linear(d_model, positive_int(n_classes, "n_classes"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_tokens(x, self.vocab_size)
        states, _ = self.cell(self.embed(x))                   # (B, T, C)：第 t 步要等第 t-1 步
        return self.head(states[:, -1])                        # (B, n_classes)


class AttentionReader(nn.Module):
    """嵌入 + 位置向量 → 最后一个位置当查询，对所有位置做一次注意力 → 线性分类器。"""

    def __init__(self, vocab_size: int, n_classes: int, max_len: int, d_model: int = 32):
        super().__init__()
        self.vocab_size = positive_int(vocab_size, "vocab_size")
        self.max_len = positive_int(max_len, "max_len")
        d_model = positive_int(d_model, "d_model")
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = LearnedPositionalEmbedding(max_len, d_model, init_std=1.0)   # 可学习的位置向量：第 5 章细讲
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, positive_int(n_classes, "n_classes"))
        self.last_weights: torch.Tensor | None = None          # 最近一次前向的注意力权重 (B, T)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_tokens(x, self.vocab_size, self.max_len)
        e = self.pos(self.embed(x))                            # (B, T, C)：词向量 + 位置向量
        q = self.q_proj(e[:, -1:])                             # (B, 1, C)：最后一个位置提问
        k, v = self.k_proj(e), self.v_proj(e)                  # (B, T, C)
        out, weights = scaled_dot_product_attention(q, k, v)  # (B, 1, C), (B, 1, T)：第 3 章的缩放点积注意力
        self.last_weights = weights[:, 0].detach()             # (B, T)
        return self.head(out[:, 0])                            # (B, 1, C) -> (B, n_classes)
