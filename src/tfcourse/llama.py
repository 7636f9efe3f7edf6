"""今天的大模型用的那种块：RMSNorm、RoPE、SwiGLU、分组查询注意力（GQA）。附录 A 引入。

第 13 章的 GPT 是 2019 年的样子：LayerNorm、可学习的位置向量、GELU、每个头一份键和值。
Llama、Qwen 这一代开源模型把这四样各换了一样，整体结构（pre-norm 的解码器栈、KV 缓存、按字生成）不变：

- `RMSNorm`：只除以均方根，不减均值、没有偏置（↔ torch.nn.RMSNorm、transformers 的 LlamaRMSNorm）；
- `rope_cos_sin` / `apply_rope`：旋转位置编码——第 5 章的"偏移 k 就是转一个角"直接作用在 q、k 上，
  打分因而只依赖相对位置。两种排法：`"half"`（前一半与后一半配对，transformers 的 rotate_half）和
  `"interleaved"`（相邻两维配对，论文与第 5 章的排法）；`interleaved_to_half` 是把一种换成另一种的维度置换；
- `SwiGLU`：down(silu(gate(x)) ⊙ up(x))（↔ LlamaMLP），`swiglu_hidden(d)`：8/3·d 取整到 multiple_of 的倍数；
- `GroupedQueryAttention`：n_heads 个查询头共用 n_kv_heads 组键、值（= n_heads 是 MHA，= 1 是 MQA），
  可选 QK-norm（Qwen3：q、k 先按头做 RMSNorm 再旋转）；KV 缓存只存 n_kv_heads 组；
- `LlamaConfig`、`LlamaGPT`：整个模型，接口与 `gpt.GPT` 相同（`model(ids, cache, last_only)`、`new_cache()`），
  所以 `gpt.generate`、`gpt.train_lm`、`gpt.mean_nll` 直接能用；
- `copy_from_transformers(hf_model)`：把 transformers 的 LlamaForCausalLM / Qwen3ForCausalLM 的权重抄进 LlamaGPT；
- `kv_bytes_per_token(config)`：KV 缓存每个位置占的字节数 2 · L · n_kv_heads · d_head · 每个数的字节数；
- `load_gpt_zh_llama()`：随课程包发布的检查点 "gpt-zh-llama"（与 gpt-zh 同语料、同字表、参数量与训练量相当）。

形状记号：B 批，T 位置数，C = d_model，H 个查询头，G = n_kv_heads 组键值，D 每头维数，P 已缓存的位置数。
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ._checks import ModelConfig, describe_shape, positive_int
from .attention import KVCache, LayerKVCache, scaled_dot_product_attention

__all__ = ["RMSNorm", "rope_cos_sin", "rotate_half", "apply_rope", "interleaved_to_half", "SwiGLU", "swiglu_hidden",
           "GroupedQueryAttention", "LlamaBlock", "LlamaConfig", "LlamaGPT", "copy_from_transformers",
           "kv_bytes_per_token", "GPT_ZH_LLAMA", "load_gpt_zh_llama"]


# ---------------------------------------------------------------------------
# RMSNorm
# ---------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """y = x / √(mean(x²) + eps) · weight：LayerNorm 去掉"减均值"和偏置。每个位置少算一个均值、少存 C 个参数。"""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(positive_int(dim, "dim")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.shape[-1:] != self.weight.shape:
            raise ValueError(f"RMSNorm 的输入最后一维应为 {self.weight.shape[0]}，实际为 {describe_shape(x)}。")
        x32 = x.float()                                             # 与 transformers 一样：在 float32 里算
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(x.dtype)


# ---------------------------------------------------------------------------
# RoPE：旋转位置编码
# ---------------------------------------------------------------------------

def rope_cos_sin(positions, d_head: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """位置 positions (T,) 的 cos、sin 表，形状 (T, d_head)，按 "half" 排法（前后两半重复同一组角度）。

    第 i 对维度的角频率 ω_i = base^(−2i/d_head)（与第 5 章 `positional.frequencies` 相同），位置 p 转 p·ω_i。
    角度按 transformers 的做法在 float32 里算（频率表先在 float32 里算好），两边的结果逐位相同。"""
    d_head = positive_int(d_head, "d_head")
    if d_head % 2:
        raise ValueError(f"RoPE 的每头维数 d_head 应为偶数（两维一对地转），实际为 {d_head}。")
    base = float(base)
    if not base > 1.0 or not math.isfinite(base):
        raise ValueError(f"RoPE 的 base 应为大于 1 的有限数，实际为 {base}。")
    inv_freq = 1.0 / (base ** (torch.arange(0, d_head, 2, dtype=torch.int64).float() / d_head))   # (D/2,)
    pos = torch.as_tensor(positions).float()
    angles = pos[:, None] * inv_freq[None, :]                        # (T, D/2)
    emb = torch.cat([angles, angles], dim=-1)                        # (T, D)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) → (−x2, x1)，x1、x2 是最后一维的前一半与后一半（第 i 维与第 i + D/2 维配成一对）。"""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, style: str = "half") -> torch.Tensor:
    """把 x (…, T, D) 的每一对维度转过位置对应的角度。cos、sin 来自 `rope_cos_sin`（(T, D)）。

    style="half"：第 i 维与第 i + D/2 维配对（transformers 的做法）；
    style="interleaved"：第 2i 维与第 2i+1 维配对（论文与第 5 章的做法）。两者转的角度相同，只是配对不同。"""
    if style == "half":
        return x * cos + rotate_half(x) * sin
    if style == "interleaved":
        D = x.shape[-1]
        c, s = cos[..., : D // 2], sin[..., : D // 2]                # 每对一个角度 (T, D/2)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = x1 * c - x2 * s
        out[..., 1::2] = x1 * s + x2 * c
        return out
    raise ValueError(f"style 应为 'half' 或 'interleaved'，实际为 {style!r}。")


def interleaved_to_half(d_head: int) -> torch.Tensor:
    """维度置换 perm：x[..., perm] 把"相邻配对"排成"前后两半配对"——先放所有偶数维，再放所有奇数维。

    对 q、k 的投影矩阵的输出维做同样的置换（W[perm]），interleaved 的模型就变成 half 的模型，打分不变。"""
    d_head = positive_int(d_head, "d_head")
    if d_head % 2:
        raise ValueError(f"d_head 应为偶数，实际为 {d_head}。")
    return torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])


# ---------------------------------------------------------------------------
# SwiGLU
# ---------------------------------------------------------------------------

def swiglu_hidden(d_model: int, multiple_of: int = 64) -> int:
    """SwiGLU 的隐藏宽度：8/3 · d_model，再向上取整到 multiple_of 的倍数。

    为什么是 8/3：GELU 的前馈层有两个 d × 4d 的矩阵（8d² 个参数）；SwiGLU 有三个 d × h 的矩阵（3dh 个），
    h = 8d/3 时参数量相同。取整到 64、256 的倍数是为了让矩阵乘法的形状整齐（Llama 用 256）。"""
    d_model, multiple_of = positive_int(d_model, "d_model"), positive_int(multiple_of, "multiple_of")
    return multiple_of * math.ceil(8 * d_model / (3 * multiple_of))


class SwiGLU(nn.Module):
    """门控前馈层：down(silu(gate(x)) ⊙ up(x))，三个不带偏置的线性层（↔ transformers 的 LlamaMLP）。"""

    def __init__(self, d_model: int, hidden: int, dropout: float = 0.0):
        super().__init__()
        d_model, hidden = positive_int(d_model, "d_model"), positive_int(hidden, "hidden")
        self.gate_proj = nn.Linear(d_model, hidden, bias=False)
        self.up_proj = nn.Linear(d_model, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x)))


# ---------------------------------------------------------------------------
# 分组查询注意力（GQA；MHA 与 MQA 是它的两端）
# ---------------------------------------------------------------------------

class GroupedQueryAttention(nn.Module):
    """H 个查询头、G 组键值：第 h 个查询头用第 h // (H/G) 组的键、值（↔ transformers 的 repeat_kv）。

    forward(x (B, T, C), cos, sin, mask, cache) → (B, T, C)；cos、sin 是这 T 个位置的 RoPE 表 (T, D)。
    q、k 先（可选）按头做 RMSNorm（qk_norm，Qwen3），再旋转；缓存里存的是旋转之后的 k 和 v，只有 G 组。"""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, d_head: int | None = None,
                 qk_norm: bool = False, eps: float = 1e-6, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        d_model, n_heads, n_kv_heads = (positive_int(v, n) for v, n in
                                        ((d_model, "d_model"), (n_heads, "n_heads"), (n_kv_heads, "n_kv_heads")))
        if n_heads % n_kv_heads:
            raise ValueError(f"n_heads 应是 n_kv_heads 的倍数（每组键值服务同样多个查询头）："
                             f"n_heads={n_heads}，n_kv_heads={n_kv_heads}。")
        d_head = d_model // n_heads if d_head is None else positive_int(d_head, "d_head")
        self.d_model, self.n_heads, self.n_kv_heads, self.d_head = d_model, n_heads, n_kv_heads, d_head
        self.q_proj = nn.Linear(d_model, n_heads * d_head, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * d_head, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * d_head, bias=bias)
        self.o_proj = nn.Linear(n_heads * d_head, d_model, bias=bias)
        self.q_norm = RMSNorm(d_head, eps) if qk_norm else None
        self.k_norm = RMSNorm(d_head, eps) if qk_norm else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, cos, sin, mask=None, cache: LayerKVCache | None = None):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_head)         # (B, T, H, D)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.d_head)      # (B, T, G, D)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.d_head)
        if self.q_norm is not None:                                       # QK-norm：每个头的 q、k 各自归一化
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # (B, H 或 G, T, D)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.append(k, v)                                     # (B, G, P + T, D)：缓存只存 G 组
        rep = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)   # (B, H, S, D)
        out, _ = scaled_dot_product_attention(q, k, v, mask, dropout=self.dropout)   # (B, H, T, D)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head))


class LlamaBlock(nn.Module):
    """x = x + Attn(RMSNorm(x))；x = x + SwiGLU(RMSNorm(x))（pre-norm，与 gpt.GPT 的块同一个结构）。"""

    def __init__(self, c: "LlamaConfig"):
        super().__init__()
        self.attn_norm = RMSNorm(c.d_model, c.eps)
        self.attn = GroupedQueryAttention(c.d_model, c.n_heads, c.n_kv_heads, c.d_head, c.qk_norm, c.eps, c.dropout)
        self.ffn_norm = RMSNorm(c.d_model, c.eps)
        self.ffn = SwiGLU(c.d_model, c.d_ff, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, cos, sin, mask=None, cache=None):
        x = x + self.drop(self.attn(self.attn_norm(x), cos, sin, mask, cache))
        return x + self.ffn(self.ffn_norm(x))


# ---------------------------------------------------------------------------
# 整个模型
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LlamaConfig(ModelConfig):
    """LlamaGPT 的超参数。n_kv_heads：键值的组数（= n_heads 是 MHA，1 是 MQA）；head_dim：0 表示 d_model / n_heads；
    d_ff：SwiGLU 的隐藏宽度（`swiglu_hidden(d_model)`）；rope_base：RoPE 的 base（transformers 的 rope_theta）；
    max_len：允许的最长序列（RoPE 没有位置表，这只是一道护栏）；tie_embeddings：输出层与词向量表共享权重。"""

    vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    n_kv_heads: int = 2
    n_layers: int = 2
    d_ff: int = 384
    max_len: int = 256
    rope_base: float = 10000.0
    eps: float = 1e-6
    qk_norm: bool = False
    tie_embeddings: bool = True
    head_dim: int = 0
    dropout: float = 0.0

    POSITIVE = ("vocab_size", "d_model", "n_heads", "n_kv_heads", "n_layers", "d_ff", "max_len")

    def __post_init__(self):
        for name in self.POSITIVE:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"LlamaConfig.{name} 应为正整数，实际为 {value!r}。")
        if self.head_dim == 0 and self.d_model % self.n_heads:
            raise ValueError(f"d_model 必须能被 n_heads 整除（或另给 head_dim）：d_model={self.d_model}，"
                             f"n_heads={self.n_heads}。")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads 应是 n_kv_heads 的倍数：n_heads={self.n_heads}，n_kv_heads={self.n_kv_heads}。")
        if self.d_head % 2:
            raise ValueError(f"每头维数应为偶数（RoPE 两维一对地转），实际为 {self.d_head}。")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"LlamaConfig.dropout 应在 [0, 1) 之间，实际为 {self.dropout!r}。")
        if not float(self.rope_base) > 1.0:
            raise ValueError(f"rope_base 应大于 1，实际为 {self.rope_base!r}。")

    @property
    def d_head(self) -> int:
        return self.head_dim or self.d_model // self.n_heads


class LlamaGPT(nn.Module):
    """只有解码器的语言模型，块换成 RMSNorm + RoPE + SwiGLU + GQA：forward(ids (B, T)) → logits (B, T, V)。

    与 gpt.GPT 相比：没有位置向量表（位置只在注意力里、通过旋转 q、k 进来），没有偏置，末尾是 RMSNorm。"""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        if not isinstance(config, LlamaConfig):
            raise ValueError(f"config 应为 LlamaConfig，实际得到 {type(config).__name__}。")
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.drop = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(LlamaBlock(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.d_model, c.eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        cos, sin = rope_cos_sin(torch.arange(c.max_len), c.d_head, c.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)          # (max_len, D)：算一次，前向切出一段
        self.register_buffer("rope_sin", sin, persistent=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """与 gpt.GPT 相同：线性层 N(0, 0.02²)，词向量表 N(0, 1/d_model)，RMSNorm 的权重为 1。"""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
            elif isinstance(m, RMSNorm):
                nn.init.ones_(m.weight)
        nn.init.normal_(self.tok_emb.weight, std=self.config.d_model ** -0.5)

    def new_cache(self) -> KVCache:
        return KVCache(len(self.layers))

    def _check_ids(self, ids, start: int) -> None:
        from .gpt import check_ids

        check_ids(ids, start, self.config.vocab_size, self.config.max_len)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None, last_only: bool = False) -> torch.Tensor:
        """ids (B, T) → logits (B, T, V)；cache、last_only 与 gpt.GPT.forward 相同。"""
        P = 0 if cache is None else cache.length
        self._check_ids(ids, P)
        T = ids.shape[1]
        cos, sin = self.rope_cos[P:P + T], self.rope_sin[P:P + T]       # 位置 P…P+T−1 的旋转角
        x = self.drop(self.tok_emb(ids))                                 # (B, T, C)：没有位置向量
        mask = None if T == 1 else torch.ones(T, P + T, dtype=torch.bool, device=ids.device).tril(P)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, mask, None if cache is None else cache[i])
        if last_only:
            x = x[:, -1:]
        return self.lm_head(self.norm(x))


def kv_bytes_per_token(config, bytes_per_number: int = 4) -> int:
    """KV 缓存里每多一个位置要多存的字节数：每层 k、v 各 n_kv_heads · d_head 个数。

    config 可以是 LlamaConfig，也可以是 gpt.GPTConfig（那里每个头都有自己的键值：n_kv_heads = n_heads）。"""
    groups = getattr(config, "n_kv_heads", config.n_heads)
    return 2 * config.n_layers * groups * config.d_head * positive_int(bytes_per_number, "bytes_per_number")


# ---------------------------------------------------------------------------
# 从 transformers 抄权重
# ---------------------------------------------------------------------------

def _hf_config(hf_model) -> tuple[LlamaConfig, str]:
    cfg = getattr(hf_model, "config", None)
    kind = getattr(cfg, "model_type", None)
    if kind not in ("llama", "qwen3"):
        raise ValueError(f"需要 transformers 的 LlamaForCausalLM 或 Qwen3ForCausalLM，"
                         f"实际得到 {type(hf_model).__name__}（model_type={kind!r}）。")
    if "rope_theta" in vars(cfg):               # transformers 4.x：rope_theta 与 rope_scaling 两个字段
        scaling = getattr(cfg, "rope_scaling", None) or {}
        rope = {"rope_theta": cfg.rope_theta,
                "rope_type": scaling.get("rope_type", scaling.get("type", "default"))}
    else:                                        # transformers 5：都在 rope_parameters 里
        rope = dict(getattr(cfg, "rope_parameters", None) or {})
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"只支持标准的 RoPE（rope_type='default'），这个模型用的是 {rope.get('rope_type')!r}"
                         "（长上下文的缩放改了频率，本课程没有实现）。")
    problems = [name for name, bad in (("attention_bias", getattr(cfg, "attention_bias", False)),
                                       ("mlp_bias", getattr(cfg, "mlp_bias", False)),
                                       ("hidden_act≠silu", cfg.hidden_act != "silu"),
                                       ("use_sliding_window", getattr(cfg, "use_sliding_window", False)))
                if bad]
    if problems:
        raise ValueError(f"这个模型的设置本课程的 LlamaGPT 没有实现：{'、'.join(problems)}。")
    n_kv = cfg.num_key_value_heads or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    config = LlamaConfig(
        vocab_size=cfg.vocab_size, d_model=cfg.hidden_size, n_heads=cfg.num_attention_heads, n_kv_heads=n_kv,
        n_layers=cfg.num_hidden_layers, d_ff=cfg.intermediate_size, max_len=cfg.max_position_embeddings,
        rope_base=float(rope.get("rope_theta", 10000.0)), eps=cfg.rms_norm_eps,
        qk_norm=kind == "qwen3", tie_embeddings=bool(cfg.tie_word_embeddings),
        head_dim=0 if head_dim * cfg.num_attention_heads == cfg.hidden_size else head_dim)
    return config, kind


# 本课程的名字 ← transformers 的名字（每层的前缀是 layers.{i}. ← model.layers.{i}.）
_LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn.q_proj.weight": "self_attn.q_proj.weight", "attn.k_proj.weight": "self_attn.k_proj.weight",
    "attn.v_proj.weight": "self_attn.v_proj.weight", "attn.o_proj.weight": "self_attn.o_proj.weight",
    "attn.q_norm.weight": "self_attn.q_norm.weight", "attn.k_norm.weight": "self_attn.k_norm.weight",
    "ffn.gate_proj.weight": "mlp.gate_proj.weight", "ffn.up_proj.weight": "mlp.up_proj.weight",
    "ffn.down_proj.weight": "mlp.down_proj.weight",
}


@torch.no_grad()
def copy_from_transformers(hf_model) -> LlamaGPT:
    """transformers 的 LlamaForCausalLM / Qwen3ForCausalLM → 装着同样权重的 LlamaGPT（float32，eval 模式）。

    两边的 RoPE 都是 "half" 排法，权重一一对应、不用置换；名字的对应表见 `_LAYER_NAMES`。"""
    config, _ = _hf_config(hf_model)
    ours = LlamaGPT(config)
    theirs = hf_model.state_dict()
    names = {"tok_emb.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight"}
    if not config.tie_embeddings:
        names["lm_head.weight"] = "lm_head.weight"
    for i in range(config.n_layers):
        for mine, hf in _LAYER_NAMES.items():
            if config.qk_norm or "_norm.weight" not in mine or mine.startswith(("attn_norm", "ffn_norm")):
                names[f"layers.{i}.{mine}"] = f"model.layers.{i}.{hf}"
    state = ours.state_dict()
    for mine, hf in names.items():
        if hf not in theirs:
            raise ValueError(f"transformers 的模型里没有 {hf}（要抄进 {mine}）。")
        if theirs[hf].shape != state[mine].shape:
            raise ValueError(f"{hf} 的形状 {tuple(theirs[hf].shape)} 与本课程的 {mine} {tuple(state[mine].shape)} 不同。")
        state[mine].copy_(theirs[hf].float())
    return ours.eval()


# ---------------------------------------------------------------------------
# 检查点 gpt-zh-llama
# ---------------------------------------------------------------------------

# gpt-zh 的尺寸（d_model 128、4 个头、2 层）换上今天的块：2 组键值（GQA），SwiGLU 的宽度 swiglu_hidden(128) = 384
GPT_ZH_LLAMA = dict(d_model=128, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=384, max_len=256,
                    rope_base=10000.0, eps=1e-6, dropout=0.0)


def load_gpt_zh_llama() -> tuple[LlamaGPT, "CharVocab"]:
    """载入检查点 "gpt-zh-llama"（`make checkpoints` 训练，SHA-256 核对），返回 (eval 模式的 LlamaGPT, CharVocab)。

    字表与 gpt-zh 是同一张（0 号 ⏎、1 号 □、2、3 号 <好评>、<差评>）；训练记录与困惑度在 `model.meta` 里。"""
    from . import checkpoints
    from .tokenize import CharVocab

    state, meta = checkpoints.load("gpt-zh-llama")
    model = LlamaGPT(LlamaConfig(**meta["config"]))
    state = {k: v.float() for k, v in state.items()}
    state["lm_head.weight"] = state["tok_emb.weight"]                   # 共享权重只存了一份
    model.load_state_dict(state)
    model.meta = meta
    return model.eval(), CharVocab.from_meta(meta["vocab"])
