"""完整的编码器–解码器 Transformer（Vaswani et al., 2017）。第 9 章引入，第 6 章用它数参数，第 10 章训练它。

- `TransformerConfig`：冻结的 dataclass，带预设 `TINY`（测试用）与 `BASE`（论文的 base 模型，用来数参数）；
- `Transformer(config)`：token id 进、logits 出，`model(src, tgt)`；推理时用 `encode` / `decode`；
- `copy_from_torch(ours, theirs)`：把 torch.nn 的编码器层 / 解码器层 / 编码器栈 / 解码器栈 / nn.Transformer
  的权重抄进本课程的模块，用来证明两边逐位相等。

形状记号：B 批，S 源序列长度，T 目标序列长度，C = d_model，V 词表大小。
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ._checks import ModelConfig, describe_shape
from .attention import causal_mask
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer
from .positional import sinusoidal_positional_encoding

__all__ = ["TransformerConfig", "TINY", "BASE", "PRESETS", "Transformer", "copy_from_torch", "count_parameters"]


@dataclass(frozen=True)
class TransformerConfig(ModelConfig):
    """Transformer 的超参数。n_layers 是编码器、解码器各自的层数（论文 N = 6）。

    share_embeddings：源、目标共用一张词向量表（论文用共享的 BPE 词表，要求两边词表大小相同）；
    tie_output：输出层与目标词向量表共享权重（论文 3.4 节）；final_norm：编码器栈、解码器栈末尾各加一个 LayerNorm
    （torch.nn.Transformer 总是加；pre-LN 必须加）。
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 512
    pad_id: int = 0
    norm_first: bool = False
    final_norm: bool = True
    share_embeddings: bool = False
    tie_output: bool = True
    layer_norm_eps: float = 1e-5

    POSITIVE = ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len")

    def __post_init__(self):
        self.check_common()
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        if isinstance(self.pad_id, bool) or not isinstance(self.pad_id, int) or not 0 <= self.pad_id < smallest:
            raise ValueError(f"pad_id 应是两边词表里都有的 id（0 到 {smallest - 1}），实际为 {self.pad_id!r}。")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"share_embeddings=True 要求源、目标词表一样大：src_vocab_size={self.src_vocab_size}，"
                f"tgt_vocab_size={self.tgt_vocab_size}。"
            )


# 测试与演示用的小模型：几毫秒就能跑一次前向。
TINY = TransformerConfig(src_vocab_size=16, tgt_vocab_size=16, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                         dropout=0.0, max_len=64)
# 论文表 3 的 base 模型：N=6，d_model=512，h=8，d_ff=2048，P_drop=0.1；WMT14 英德共享 BPE 词表约 37000。
BASE = TransformerConfig(src_vocab_size=37000, tgt_vocab_size=37000, d_model=512, n_heads=8, n_layers=6, d_ff=2048,
                         dropout=0.1, max_len=5000, share_embeddings=True, tie_output=True)
PRESETS = {"tiny": TINY, "base": BASE}


def count_parameters(module: nn.Module) -> int:
    """参数个数；共享（绑定）的张量只算一次（module.parameters() 本身就去重）。"""
    return sum(p.numel() for p in module.parameters())


class Transformer(nn.Module):
    """编码器–解码器 Transformer：model(src (B, S), tgt (B, T)) → logits (B, T, V_tgt)。

    src、tgt 是 int64 的 token id，按 config.pad_id 右侧补齐；填充掩码与因果掩码在模型内部生成。
    词向量乘 √d_model 后加正弦位置编码（论文 3.4、3.5 节）。
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise ValueError(f"需要一个 TransformerConfig，实际得到 {type(config).__name__}。")
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = self.src_embed if c.share_embeddings else nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_positional_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        enc = EncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first, c.layer_norm_eps)
        dec = DecoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, c.norm_first, c.layer_norm_eps)
        self.encoder = Encoder(enc, c.n_layers, c.final_norm)
        self.decoder = Decoder(dec, c.n_layers, c.final_norm)
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size, bias=not c.tie_output)   # 输出层
        self._init_weights()
        if c.tie_output:
            self.generator.weight = self.tgt_embed.weight           # 权重绑定：同一个张量

    def _init_weights(self) -> None:
        # 矩阵用 Xavier 均匀初始化（torch.nn.Transformer 也用它，只是把 Q、K、V 拼成一个 3C×C 的矩阵来取范围，
        # 所以它的 Q、K、V 初值范围更窄）；词向量 N(0, d_model^-1/2)，乘 √d_model 后方差约为 1。
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        for emb in {id(self.src_embed): self.src_embed, id(self.tgt_embed): self.tgt_embed}.values():
            nn.init.normal_(emb.weight, mean=0.0, std=self.config.d_model ** -0.5)

    # ---- 输入检查 ----
    def _check_ids(self, ids, name: str, vocab_size: int) -> None:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(f"{name} 应为形状 (B, 长度) 的 int64 张量（token id），实际为 {describe_shape(ids)}。")
        if ids.dtype != torch.long:
            raise ValueError(f"{name} 应为 int64（torch.long）的 token id，实际 dtype 为 {ids.dtype}。")
        if ids.shape[1] == 0:
            raise ValueError(f"{name} 的长度为 0：至少要有一个 token。")
        if ids.shape[1] > self.config.max_len:
            raise ValueError(f"{name} 长 {ids.shape[1]}，超过了 config.max_len={self.config.max_len}。")
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} 里有越界的 token id {bad}：应在 0 到 {vocab_size - 1} 之间（词表大小 {vocab_size}）。")

    # ---- 掩码 ----
    def source_mask(self, src: torch.Tensor) -> torch.Tensor:
        """源序列的填充掩码 (B, 1, S)：True 表示是真 token、可以看。"""
        return (src != self.config.pad_id)[:, None, :]

    def target_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        """目标序列的自注意力掩码 (B, T, T)：因果掩码与填充掩码取"且"。"""
        T = tgt.shape[1]
        return causal_mask(T, device=tgt.device)[None] & (tgt != self.config.pad_id)[:, None, :]   # (B, T, T)

    def embed(self, ids: torch.Tensor, table: nn.Embedding) -> torch.Tensor:
        """token id (B, L) → table(ids)·√d_model + 位置编码，再 dropout（论文 3.4、3.5 节）：编码器、解码器的输入。"""
        x = table(ids) * math.sqrt(self.config.d_model)            # (B, L) -> (B, L, C)
        return self.dropout(x + self.pe[: ids.shape[1]])

    # ---- 前向 ----
    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """src (B, S) → memory (B, S, C)。"""
        self._check_ids(src, "src", self.config.src_vocab_size)
        return self.encoder(self.embed(src, self.src_embed), self.source_mask(src))

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        """tgt (B, T)、memory (B, S, C) → logits (B, T, V)。memory_mask 用 `source_mask(src)`（None 表示全可见）。"""
        self._check_ids(tgt, "tgt", self.config.tgt_vocab_size)
        if not isinstance(memory, torch.Tensor) or memory.dim() != 3 or memory.shape[0] != tgt.shape[0]:
            raise ValueError(f"memory 应为形状 (B={tgt.shape[0]}, S, {self.config.d_model}) 的张量（encode 的输出），"
                             f"实际为 {describe_shape(memory)}。")
        x = self.decoder(self.embed(tgt, self.tgt_embed), memory, self.target_mask(tgt), memory_mask)
        return self.generator(x)                                     # (B, T, C) -> (B, T, V)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        self._check_ids(src, "src", self.config.src_vocab_size)
        self._check_ids(tgt, "tgt", self.config.tgt_vocab_size)
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src 与 tgt 的批大小应相同：src {tuple(src.shape)}，tgt {tuple(tgt.shape)}。")
        return self.decode(tgt, self.encode(src), self.source_mask(src))

    def attention_weights(self) -> dict[str, list[torch.Tensor]]:
        """最近一次前向的注意力权重，每层一个 (B, H, 查询长度, 键长度)：
        {"encoder": 编码器自注意力, "decoder_self": 解码器掩码自注意力, "cross": 交叉注意力}。"""
        return {
            "encoder": [layer.attn_weights for layer in self.encoder.layers],
            "decoder_self": [layer.self_attn_weights for layer in self.decoder.layers],
            "cross": [layer.cross_attn_weights for layer in self.decoder.layers],
        }

    @torch.no_grad()
    def load_torch_weights(self, other: nn.Transformer) -> "Transformer":
        """抄 torch.nn.Transformer 的编码器栈与解码器栈（它没有词向量与输出层，这两样保持本模型自己的）。"""
        if not isinstance(other, nn.Transformer):
            raise ValueError(f"需要 torch.nn.Transformer，实际得到 {type(other).__name__}。")
        self.encoder.load_torch_weights(other.encoder)
        self.decoder.load_torch_weights(other.decoder)
        return self


def copy_from_torch(ours: nn.Module, theirs: nn.Module) -> nn.Module:
    """把 torch.nn 参照模块的权重抄进本课程对应的模块，返回 ours。

    支持：EncoderLayer ← nn.TransformerEncoderLayer，DecoderLayer ← nn.TransformerDecoderLayer，
    Encoder ← nn.TransformerEncoder，Decoder ← nn.TransformerDecoder，Transformer ← nn.Transformer，
    MultiHeadAttention ← nn.MultiheadAttention。两边的尺寸、norm_first、层数须一致，否则抛出中文 ValueError。
    """
    loader = getattr(ours, "load_torch_weights", None)
    if loader is None:
        raise ValueError(f"{type(ours).__name__} 不是本课程里能抄 torch 权重的模块。")
    return loader(theirs)
