"""位置编码（positional encoding）：告诉注意力"谁在第几个位置"。第 5 章引入。

- `sinusoidal_positional_encoding`：论文里的正弦/余弦编码；
- `relative_rotation`：PE(p + k) = R_k · PE(p) 里的那个线性映射（只依赖偏移 k，与 p 无关）；
- `LearnedPositionalEmbedding`：可学习的位置向量（BERT、GPT 的做法）。
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import describe_shape, positive_int

__all__ = ["sinusoidal_positional_encoding", "frequencies", "relative_rotation", "LearnedPositionalEmbedding"]


def _check_d_model(d_model) -> int:
    d_model = positive_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(f"正弦位置编码的 d_model 应为偶数（sin、cos 成对出现），实际为 {d_model}。")
    return d_model


def frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """第 i 对维度的角频率 ω_i = 1 / base^(2i / d_model)，i = 0 … d_model/2 − 1；形状 (d_model/2,)。"""
    d_model = _check_d_model(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return torch.exp(-math.log(base) * two_i / d_model)


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """正弦位置编码表 (max_len, d_model)，float32。

    PE[p, 2i] = sin(p / base^(2i/d_model))，PE[p, 2i+1] = cos(p / base^(2i/d_model))。
    """
    max_len = positive_int(max_len, "max_len")
    omega = frequencies(d_model, base)                             # (d_model/2,)
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * omega[None, :]   # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = angles.sin()
    pe[:, 1::2] = angles.cos()
    return pe.float()


def relative_rotation(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """偏移 k 对应的线性映射 R_k (d_model, d_model)，满足 PE[p + k] = R_k @ PE[p]（对所有 p）。

    每对维度 (2i, 2i+1) 上是一个转角 k·ω_i 的 2×2 旋转（和角公式），所以 R_k 只依赖 k。
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"偏移 k 应为整数，实际得到 {k!r}。")
    omega = frequencies(d_model, base) * k                         # (d_model/2,)
    c, s = omega.cos(), omega.sin()
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    R[0::2, 0::2] = torch.diag(c)                                  # sin(a+b) = sin a cos b + cos a sin b
    R[0::2, 1::2] = torch.diag(s)
    R[1::2, 0::2] = torch.diag(-s)                                 # cos(a+b) = cos a cos b − sin a sin b
    R[1::2, 1::2] = torch.diag(c)
    return R


class LearnedPositionalEmbedding(nn.Module):
    """可学习的位置向量：每个位置一个 d_model 维向量，加到词向量上；超过 max_len 的位置没有向量。

    初始值取自 N(0, init_std²)：默认 0.02（BERT 的做法，Hugging Face 的 GPT-2 实现也用它；
    OpenAI 原版 GPT-2 的位置表用 0.01）；第 1 章的注意力阅读器用 1.0（与 nn.Embedding 相同）。
    """

    def __init__(self, max_len: int, d_model: int, init_std: float = 0.02):
        super().__init__()
        self.max_len = positive_int(max_len, "max_len")
        self.weight = nn.Parameter(torch.randn(self.max_len, positive_int(d_model, "d_model")) * float(init_std))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, T, C) → x + P[:T]。"""
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.weight.shape[1]:
            raise ValueError(f"输入的形状应为 (B, T, {self.weight.shape[1]})，实际为 {describe_shape(x)}。")
        T = x.shape[1]
        if T > self.max_len:
            raise ValueError(f"序列长度 {T} 超过了可学习位置向量的上限 max_len={self.max_len}：学过的位置只有这么多。")
        return x + self.weight[:T]
