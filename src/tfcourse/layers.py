"""Transformer 的层：逐位置前馈网络、编码器层、解码器层，以及把它们叠起来的编码器栈、解码器栈。

- 第 6 章：`FeedForward`，残差 + LayerNorm 的两种摆法（post-LN 是论文的做法，默认；pre-LN 用 norm_first=True）；
- 第 7 章：`EncoderLayer`、`Encoder`；
- 第 8 章：`DecoderLayer`、`Decoder`；
- 第 13 章：`EncoderLayer.forward(..., cache=)`，GPT 生成时用的 KV 缓存（见 attention.KVCache）。

每个类都有 `load_torch_weights(torch 模块)`：把 torch.nn.TransformerEncoderLayer / TransformerDecoderLayer /
TransformerEncoder / TransformerDecoder 的权重抄过来，用来逐位比对。掩码约定同 attention 模块：True 表示"可以看"。
每层最近一次前向的注意力权重保存在属性里（`attn_weights`、`self_attn_weights`、`cross_attn_weights`，(B, H, T, S)），
供可视化使用。
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ._checks import describe_shape, positive_int
from .attention import MultiHeadAttention

__all__ = ["FeedForward", "EncoderLayer", "DecoderLayer", "Encoder", "Decoder"]


def _check_dropout(dropout) -> float:
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"dropout 应在 [0, 1) 之间，实际为 {dropout!r}。")
    return float(dropout)


def _check_input(x, d_model: int, name: str) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{name} 的形状应为 (B, 长度, {d_model})（批在前），实际为 {describe_shape(x)}。")
    if not x.is_floating_point():
        raise ValueError(f"{name} 应为浮点张量（词向量），实际 dtype 为 {x.dtype}；token id 请先经过嵌入层。")


def _expect(other, cls, what: str) -> None:
    if not isinstance(other, cls):
        raise ValueError(f"需要 torch.nn.{cls.__name__}，实际得到 {type(other).__name__}（{what}）。")


def _check_same(name: str, ours, theirs) -> None:
    if ours != theirs:
        raise ValueError(f"两边的 {name} 不一致：本课程的模块是 {ours}，torch 的模块是 {theirs}。")


# gelu：精确的 erf 版（transformers 的 BERT 用它；Google 的 BERT 代码与 GPT-2 用 tanh 近似，两者相差不到 1e-3）
ACTIVATIONS = {"relu": torch.relu, "gelu": nn.functional.gelu}


def _check_activation(activation) -> str:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation 应为 {' 或 '.join(map(repr, ACTIVATIONS))}，实际为 {activation!r}。")
    return activation


class FeedForward(nn.Module):
    """逐位置前馈网络（position-wise FFN）：FFN(x) = max(0, x W₁ + b₁) W₂ + b₂，每个位置各算各的。

    x: (B, T, C) → (B, T, C)，中间宽度 d_ff（论文里是 4 × d_model）。第 6 章引入；
    activation="gelu" 把 max(0, ·) 换成 GELU（第 12、13 章的 BERT、GPT）。
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        self.d_model, self.d_ff = positive_int(d_model, "d_model"), positive_int(d_ff, "d_ff")
        self.activation = _check_activation(activation)
        self.linear1 = nn.Linear(self.d_model, self.d_ff)
        self.linear2 = nn.Linear(self.d_ff, self.d_model)
        self.dropout = nn.Dropout(_check_dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = ACTIVATIONS[self.activation](self.linear1(x))   # (B, T, C) -> (B, T, F)
        return self.linear2(self.dropout(h))                # (B, T, F) -> (B, T, C)


class EncoderLayer(nn.Module):
    """编码器层：自注意力子层 + 前馈子层，每个子层外面包残差连接和 LayerNorm。第 7 章引入。

    post-LN（默认，论文）：x = LN(x + Sublayer(x))；pre-LN（norm_first=True）：x = x + Sublayer(LN(x))。
    forward(x (B, S, C), mask) → (B, S, C)；mask 通常是填充掩码 (B, 1, S)，True 表示可以看。
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 eps: float = 1e-5, activation: str = "relu"):
        super().__init__()
        dropout = _check_dropout(dropout)
        self.d_model, self.norm_first = positive_int(d_model, "d_model"), bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1, self.norm2 = nn.LayerNorm(d_model, eps=eps), nn.LayerNorm(d_model, eps=eps)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None      # 最近一次前向的自注意力权重 (B, H, S, S)

    def _attend(self, x, mask, cache=None):
        out, weights = self.self_attn(x, x, x, mask, cache=cache)
        self.attn_weights = weights.detach()
        return self.dropout1(out)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache=None) -> torch.Tensor:
        """cache：可选的 attention.LayerKVCache（第 13 章，GPT 生成时用）；给了它，自注意力的键、值里
        还包括缓存的位置，mask 的最后一维按缓存后的长度给。"""
        _check_input(x, self.d_model, "编码器层的输入 x")
        if self.norm_first:
            x = x + self._attend(self.norm1(x), mask, cache)
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self._attend(x, mask, cache))          # (B, S, C)
        return self.norm2(x + self.dropout2(self.ffn(x)))

    @torch.no_grad()
    def load_torch_weights(self, other: nn.TransformerEncoderLayer) -> "EncoderLayer":
        """抄 torch.nn.TransformerEncoderLayer 的权重（激活函数、norm_first 须与本层一致）。"""
        return _copy_layer(self, other, nn.TransformerEncoderLayer, "编码器层", n_norms=2)


class DecoderLayer(nn.Module):
    """解码器层：带因果掩码的自注意力 → 交叉注意力（query 来自解码器，key/value 来自编码器输出 memory）→ 前馈。

    forward(x (B, T, C), memory (B, S, C), self_mask (T, T) 或 (B, T, T), memory_mask (B, 1, S)) → (B, T, C)。
    第 8 章引入。
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False,
                 eps: float = 1e-5):
        super().__init__()
        dropout = _check_dropout(dropout)
        self.d_model, self.norm_first = positive_int(d_model, "d_model"), bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model, eps=eps) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(3))
        self.self_attn_weights: torch.Tensor | None = None     # (B, H, T, T)
        self.cross_attn_weights: torch.Tensor | None = None    # (B, H, T, S)：输出位置看输入的哪里

    def _self(self, x, mask):
        out, weights = self.self_attn(x, x, x, mask)
        self.self_attn_weights = weights.detach()
        return self.dropout1(out)

    def _cross(self, x, memory, mask):
        out, weights = self.cross_attn(x, memory, memory, mask)
        self.cross_attn_weights = weights.detach()
        return self.dropout2(out)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_input(x, self.d_model, "解码器层的输入 x")
        _check_input(memory, self.d_model, "编码器输出 memory")
        if self.norm_first:
            x = x + self._self(self.norm1(x), self_mask)
            x = x + self._cross(self.norm2(x), memory, memory_mask)
            return x + self.dropout3(self.ffn(self.norm3(x)))
        x = self.norm1(x + self._self(x, self_mask))               # (B, T, C)
        x = self.norm2(x + self._cross(x, memory, memory_mask))
        return self.norm3(x + self.dropout3(self.ffn(x)))

    @torch.no_grad()
    def load_torch_weights(self, other: nn.TransformerDecoderLayer) -> "DecoderLayer":
        """抄 torch.nn.TransformerDecoderLayer 的权重（torch 把交叉注意力叫 multihead_attn）。"""
        _copy_layer(self, other, nn.TransformerDecoderLayer, "解码器层", n_norms=3)
        self.cross_attn.load_torch_weights(other.multihead_attn)
        return self


class _Stack(nn.Module):
    """n_layers 个相同结构的层（深拷贝，初始权重相同；完整的 Transformer 建好后会重新初始化），末尾可选一个 LayerNorm。"""

    _torch_type: type = nn.Module
    _what = ""

    def __init__(self, layer, n_layers: int, final_norm: bool = True):
        super().__init__()
        self.layers = nn.ModuleList(copy.deepcopy(layer) for _ in range(positive_int(n_layers, "n_layers")))
        self.norm = nn.LayerNorm(layer.d_model, eps=layer.norm1.eps) if final_norm else None

    @torch.no_grad()
    def load_torch_weights(self, other):
        """抄 torch 对应的栈（逐层抄，再抄末尾的 LayerNorm）；层数与有无末尾 LayerNorm 须一致。"""
        _expect(other, self._torch_type, self._what)
        _copy_stack(self, other)
        return self


class Encoder(_Stack):
    """编码器栈：n_layers 个 EncoderLayer，末尾可选一个 LayerNorm（pre-LN 必需；torch.nn.Transformer 总是有）。"""

    _torch_type, _what = nn.TransformerEncoder, "编码器栈"

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


class Decoder(_Stack):
    """解码器栈：n_layers 个 DecoderLayer，末尾可选一个 LayerNorm。"""

    _torch_type, _what = nn.TransformerDecoder, "解码器栈"

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask=None, memory_mask=None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)


def _check_activation_matches(ours, other) -> None:
    act = other.activation
    theirs = ("relu" if act is torch.nn.functional.relu or isinstance(act, nn.ReLU) else
              "gelu" if act is torch.nn.functional.gelu or (isinstance(act, nn.GELU) and act.approximate == "none")
              else repr(act))
    _check_same("激活函数", ours.ffn.activation, theirs)


def _copy_layer(ours, other, torch_type, what: str, n_norms: int):
    """编码器层、解码器层共有的部分：检查类型与结构，抄自注意力、前馈网络和 n_norms 个 LayerNorm。"""
    _expect(other, torch_type, what)
    _check_same("norm_first", ours.norm_first, other.norm_first)
    _check_activation_matches(ours, other)
    ours.self_attn.load_torch_weights(other.self_attn)
    _copy_ffn(ours.ffn, other)
    _copy_norms(ours, other, n_norms)
    return ours


def _copy_ffn(ffn: FeedForward, other) -> None:
    _check_same("d_ff", ffn.d_ff, other.linear1.out_features)
    ffn.linear1.load_state_dict(other.linear1.state_dict())
    ffn.linear2.load_state_dict(other.linear2.state_dict())


def _copy_norms(ours, other, n: int) -> None:
    for i in range(1, n + 1):
        mine, theirs = getattr(ours, f"norm{i}"), getattr(other, f"norm{i}")
        _check_same(f"norm{i} 的 eps", mine.eps, theirs.eps)
        mine.load_state_dict(theirs.state_dict())


def _copy_stack(ours, other) -> None:
    _check_same("层数", len(ours.layers), len(other.layers))
    _check_same("末尾 LayerNorm 的有无", ours.norm is not None, other.norm is not None)
    for mine, theirs in zip(ours.layers, other.layers):
        mine.load_torch_weights(theirs)
    if ours.norm is not None:
        ours.norm.load_state_dict(other.norm.state_dict())
