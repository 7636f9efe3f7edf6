"""注意力（attention）：打分 → softmax → 加权求和。

- 第 1 章：numpy 版的 `softmax` 与 `simple_attention`（不缩放、无投影）；
- 第 2 章：`scaled_dot_product_attention_numpy`（手算之后的 numpy 版）；
- 第 3 章：torch 版 `scaled_dot_product_attention`，`causal_mask`，`padding_mask`，
  以及缩放实验用的 `scaling_statistics`；
- 第 4 章：`MultiHeadAttention`；
- 第 13 章：`KVCache`（自回归生成时缓存每层已经算过的键、值，`MultiHeadAttention.forward(..., cache=)` 往里追加）；
- 第 16 章：`tiled_attention`（分块 + 在线 softmax，不组出 (T, S) 的权重矩阵，FlashAttention 的思路）。

掩码约定与 torch.nn.functional.scaled_dot_product_attention 相同：布尔张量，True 表示"可以看"。
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ._checks import as_float_array, describe_shape, finite_number, positive_int

__all__ = [
    "softmax", "simple_attention", "first_token_attention_readout",
    "scaled_dot_product_attention_numpy", "scaled_dot_product_attention", "causal_mask", "padding_mask",
    "scaling_samples", "scaling_statistics", "MultiHeadAttention", "LayerKVCache", "KVCache",
    "tiled_attention",
]


def softmax(x, axis: int = -1) -> np.ndarray:
    """数值稳定的 softmax：先减去最大值再取指数，结果沿 axis 和为 1。"""
    x = as_float_array(x, "softmax 的输入 x", ndim=tuple(range(1, 33)))
    z = x - x.max(axis=axis, keepdims=True)                  # 防止 exp 溢出
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def simple_attention(query, keys, values=None):
    """最朴素的点积注意力（numpy）：scores = keys · query，weights = softmax(scores)。

    query: (D,)；keys: (S, D)；values: (S, D_v)，缺省时等于 keys。
    返回 (输出 (D_v,), 权重 (S,), 打分 (S,))。
    """
    q = as_float_array(query, "query", ndim=1)
    k = as_float_array(keys, "keys", ndim=2)
    if k.shape[1] != q.shape[0]:
        raise ValueError(
            f"keys 的形状应为 (S, {q.shape[0]})（每个键与 query 同维），实际为 {k.shape}。"
        )
    v = k if values is None else as_float_array(values, "values", ndim=2)
    if v.shape[0] != k.shape[0]:
        raise ValueError(f"values 的行数应等于 keys 的行数 {k.shape[0]}，实际形状为 {v.shape}。")
    scores = k @ q                                           # (S, D) @ (D,) -> (S,)
    weights = softmax(scores)                                # (S,)，和为 1
    return weights @ v, weights, scores                      # (S,) @ (S, D_v) -> (D_v,)


def first_token_attention_readout(length: int, alpha: float = 0.6, first: float = 1.0) -> float:
    """与 `tfcourse.rnn.final_hidden_state` 对照的注意力版本。

    输入 [first, 0, 0, …]（长 length）。注意力给开头位置权重 alpha，其余 1 − alpha
    平均分给后面的位置（权重和为 1），直接加权求和：没有逐步传递，也就没有连乘。
    """
    length = positive_int(length, "序列长度 length")
    alpha = finite_number(alpha, "权重 alpha")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"权重 alpha 应在 [0, 1] 之间，实际为 {alpha}。")
    if length == 1 and alpha != 1.0:
        raise ValueError("序列只有 1 个位置时，权重只能全部给它（alpha = 1）。")
    seq = np.zeros(length)
    seq[0] = finite_number(first, "开头的值 first")
    weights = np.full(length, (1.0 - alpha) / max(length - 1, 1))
    weights[0] = alpha
    return float(weights @ seq)


# ---------------------------------------------------------------------------
# 第 2 章：numpy 版缩放点积注意力（手算 → numpy → torch 的中间一步）
# ---------------------------------------------------------------------------

def scaled_dot_product_attention_numpy(q, k, v, mask=None):
    """numpy 版缩放点积注意力，与 torch 版语义相同（第 2 章手算用）。

    q: (T, D)；k: (S, D)；v: (S, D_v)；mask: (T, S) 布尔数组，True 表示"可以看"。
    返回 (输出 (T, D_v), 权重 (T, S))；一个键都不许看的行，权重与输出都为 0。
    """
    q = as_float_array(q, "q", ndim=2)
    k = as_float_array(k, "k", ndim=2)
    v = as_float_array(v, "v", ndim=2)
    if k.shape[1] != q.shape[1]:
        raise ValueError(f"k 的形状应为 (S, {q.shape[1]})（与 q 的最后一维 D 相同），实际为 {k.shape}。")
    if v.shape[0] != k.shape[0]:
        raise ValueError(f"v 的行数应等于 k 的行数 S={k.shape[0]}，实际形状为 {v.shape}。")
    scores = q @ k.T / np.sqrt(q.shape[1])                   # (T, S)
    if mask is None:
        weights = softmax(scores)
        return weights @ v, weights
    m = np.asarray(mask)
    if m.dtype != np.bool_ or m.shape != scores.shape:
        raise ValueError(f"mask 应为形状 {scores.shape} 的布尔数组，实际为 dtype={m.dtype}、形状 {m.shape}。")
    scores = np.where(m, scores, -np.inf)
    row_max = np.where(m.any(axis=1, keepdims=True), scores.max(axis=1, keepdims=True), 0.0)
    e = np.where(m, np.exp(scores - row_max), 0.0)          # 被屏蔽的位置 exp(-inf) = 0
    total = e.sum(axis=1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return weights @ v, weights


# ---------------------------------------------------------------------------
# 第 3 章：torch 版缩放点积注意力与掩码
# ---------------------------------------------------------------------------

def _check_mask(mask, target: tuple[int, ...], name: str = "mask") -> None:
    """mask 必须是布尔张量，并能广播到 target = (..., T, S)。"""
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"{name} 应为布尔 torch.Tensor（True 表示可以看），实际得到 {type(mask).__name__}。")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} 的 dtype 应为 torch.bool（True 表示可以看），实际为 {mask.dtype}。"
            "若手里是 0/1 张量，可用 mask.bool()；若是加性掩码（0 与 -inf），请改用布尔掩码。"
        )
    try:
        shape = torch.broadcast_shapes(tuple(mask.shape), target)
    except RuntimeError:
        shape = None
    if shape != tuple(target):
        raise ValueError(f"{name} 的形状 {describe_shape(mask)} 无法广播到注意力打分的形状 {tuple(target)}（…, T, S）。")


def _check_qkv(q, k, v) -> None:
    """q (..., T, D)、k (..., S, D)、v (..., S, D_v)：至少 2 维，D 相同，S 相同。"""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.dim() < 2:
            got = describe_shape(x)
            raise ValueError(f"{name} 应为至少 2 维的 torch.Tensor（…, 长度, 维度），实际得到 {got}。")
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"q 与 k 的最后一维 D 必须相同才能做点积：q 的形状 {describe_shape(q)}，k 的形状 {describe_shape(k)}。"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"k 与 v 的长度 S 必须相同（每个键配一个值）：k 的形状 {describe_shape(k)}，v 的形状 {describe_shape(v)}。"
        )


def scaled_dot_product_attention(q, k, v, mask=None, *, dropout=None):
    """缩放点积注意力：softmax(q kᵀ / √D) v。第 3 章引入。

    q: (..., T, D)；k: (..., S, D)；v: (..., S, D_v)；
    前面的批维度可以任意多（可广播）。
    mask: 可广播到 (..., T, S) 的布尔张量，True 表示"可以看"
    （与 torch 的 F.scaled_dot_product_attention 相同）。
    一个键都不许看的行（例如整行都是填充）：权重全为 0、输出为 0 向量，
    而不是 NaN（本课程用的 torch 2.13 的 F.scaled_dot_product_attention
    也这样做；2.5 之前的 torch 会给 NaN）。
    输入本身含 NaN 时照样传出 NaN，不会被悄悄抹掉。
    dropout: 可选的 nn.Dropout，作用在权重上（训练时）。
    返回 (输出 (..., T, D_v), 权重 (..., T, S))。
    """
    _check_qkv(q, k, v)
    # (..., T, D) @ (..., D, S) -> (..., T, S)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        _check_mask(mask, tuple(scores.shape))
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)             # 每行对允许的键和为 1
    if mask is not None:
        # 整行被屏蔽：softmax 得 0/0 = NaN，改成 0
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
    if dropout is not None:
        weights = dropout(weights)
    # (..., T, S) @ (..., S, D_v) -> (..., T, D_v)
    return weights @ v, weights


def scaling_samples(d_max: int = 1024, n_keys: int = 16, n_samples: int = 400, seed: int = 0):
    """缩放实验的随机样本：q (n, 1, d_max)、k (n, n_keys, d_max) 的分量独立取自 N(0, 1)，
    以及反向传播用的上游梯度 g (n, n_keys)（也取自 N(0, 1)）。全部来自同一个种子，依次抽取 q、k、g。"""
    gen = torch.Generator().manual_seed(int(seed))
    q = torch.randn(n_samples, 1, d_max, generator=gen, dtype=torch.float64)
    k = torch.randn(n_samples, n_keys, d_max, generator=gen, dtype=torch.float64)
    g = torch.randn(n_samples, n_keys, generator=gen, dtype=torch.float64)
    return q, k, g


def scaling_statistics(d_values=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), n_keys: int = 16,
                       n_samples: int = 400, seed: int = 0) -> dict:
    """为什么要除以 √d_k：对每个 d_k 抽样统计点积与 softmax 的表现（第 3 章的实验与滑块用）。

    样本来自 `scaling_samples`：一个查询对 n_keys 个键打分；小的 d_k 取大的 d_k 的前几维，
    所以滑块拖动时看到的是同一批向量、只是维数在变。返回字典（数组第一维 0 = 不缩放，1 = 除以 √d_k）：
    - d_values (n_d,)；var_dot (n_d,)：q·k 的样本方差（理论值 d_k）；
    - max_weight (2, n_d)：每行最大权重的平均；entropy (2, n_d)：每行权重的熵（以 e 为底）的平均；
    - grad_norm (2, n_d)：softmax 雅可比矩阵 J = diag(p) − ppᵀ 的 Frobenius 范数的平均——
      反向传播经过 softmax 时梯度被乘上它；
    - q_grad_mean / q_grad_median (2, n_d)：损失 L = g·p 传到查询 q 的梯度 ‖∂L/∂q‖ = ‖scale · Kᵀ J g‖
      的平均值与中位数；q_grad_small (2, n_d)：‖∂L/∂q‖ < 0.01（几乎收不到学习信号）的查询所占比例；
    - example (2, n_d, n_keys)：第一个样本那一行的权重，供小部件画柱状图。
    """
    d_values = [positive_int(d, "d_k") for d in d_values]
    n_keys = positive_int(n_keys, "键的个数 n_keys")
    n_samples = positive_int(n_samples, "样本数 n_samples")
    if n_samples < 2:
        raise ValueError(f"样本数 n_samples 至少为 2 才能估计方差，实际为 {n_samples}。")
    q_all, k_all, g = scaling_samples(max(d_values), n_keys, n_samples, seed)
    keys = ("max_weight", "entropy", "grad_norm", "q_grad_mean", "q_grad_median", "q_grad_small")
    out = {key: np.zeros((2, len(d_values))) for key in keys}
    out["example"] = np.zeros((2, len(d_values), n_keys))
    out["var_dot"] = np.zeros(len(d_values))
    for j, d in enumerate(d_values):
        k = k_all[..., :d]                                                    # (n, S, d)
        dots = (q_all[..., :d] @ k.transpose(1, 2))[:, 0]                     # (n, S)
        out["var_dot"][j] = dots.var().item()
        for i, scale in enumerate((1.0, 1.0 / math.sqrt(d))):
            p = (dots * scale).softmax(dim=-1)                                # (n, S)
            jac = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]         # (n, S, S)
            q_grad = scale * ((jac @ g[:, :, None]).transpose(1, 2) @ k)[:, 0]  # (n, d)：scale · Kᵀ J g
            q_norm = q_grad.norm(dim=-1)                                      # (n,)
            out["max_weight"][i, j] = p.max(dim=-1).values.mean().item()
            out["entropy"][i, j] = -(p * p.clamp_min(1e-300).log()).sum(-1).mean().item()
            out["grad_norm"][i, j] = jac.flatten(1).norm(dim=-1).mean().item()
            out["q_grad_mean"][i, j] = q_norm.mean().item()
            out["q_grad_median"][i, j] = q_norm.median().item()
            out["q_grad_small"][i, j] = (q_norm < 0.01).double().mean().item()
            out["example"][i, j] = p[0].numpy()
    out["d_values"] = np.asarray(d_values)
    out["n_samples"] = n_samples
    return out


def causal_mask(T: int, device=None) -> torch.Tensor:
    """因果掩码 (T, T)：位置 t 只能看 0…t（下三角为 True）。"""
    T = positive_int(T, "序列长度 T")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(x, pad_id: int | None = None, max_len: int | None = None) -> torch.Tensor:
    """填充掩码 (B, 1, S)：真实的词为 True，填充位置为 False；可广播到 (B, T, S)。

    两种用法：
    - `padding_mask(lengths, max_len=S)`：lengths 是 (B,) 的整数，表示每句的真实长度；
    - `padding_mask(ids, pad_id=0)`：ids 是 (B, S) 的词编号，等于 pad_id 的位置算填充。
    """
    x = torch.as_tensor(x)
    if pad_id is not None:
        if x.dim() != 2 or x.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"给了 pad_id 时，第一个参数应为 (B, S) 的整数词编号张量，实际为 dtype={x.dtype}、形状 {describe_shape(x)}。")
        return (x != pad_id)[:, None, :]                        # (B, S) -> (B, 1, S)
    if x.dim() != 1 or x.dtype not in (torch.int32, torch.int64):
        raise ValueError(
            f"没有 pad_id 时，第一个参数应为 (B,) 的整数长度张量，实际为 dtype={x.dtype}、形状 {describe_shape(x)}。"
            "若手里是词编号，请同时给出 pad_id。"
        )
    if x.numel() and int(x.min()) < 0:
        raise ValueError(f"长度不能为负数，实际最小值为 {int(x.min())}。")
    S = int(x.max()) if max_len is None else positive_int(max_len, "max_len")
    if x.numel() and int(x.max()) > S:
        raise ValueError(f"长度不能超过 max_len={S}，实际最大值为 {int(x.max())}。")
    return (torch.arange(S, device=x.device)[None, :] < x[:, None])[:, None, :]   # (B, 1, S)


# ---------------------------------------------------------------------------
# 第 4 章：多头注意力
# ---------------------------------------------------------------------------

class MultiHeadAttention(nn.Module):
    """多头注意力：投影 → 拆成 H 个头 → 各自做缩放点积注意力 → 拼接 → 输出投影。第 4 章引入。

    forward(query (B, T, C), key (B, S, C) = query, value (B, S, C) = key, mask) →
    (输出 (B, T, C), 每个头的权重 (B, H, T, S))。
    mask 为布尔张量，True 表示可以看，形状 (T, S)、(B, T, S) 或 (B, 1, T, S)（也可用 (B, 1, S) 的填充掩码）。
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        d_model = positive_int(d_model, "d_model")
        n_heads = positive_int(n_heads, "n_heads")
        if d_model % n_heads:
            raise ValueError(
                f"d_model 必须能被 n_heads 整除（每个头分到 d_model / n_heads 维）：d_model={d_model}，n_heads={n_heads}。"
            )
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout 应在 [0, 1) 之间，实际为 {dropout}。")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, L, _ = x.shape
        return x.view(B, L, self.n_heads, self.d_head).transpose(1, 2)   # (B, L, C) -> (B, H, L, D)

    def forward(self, query, key=None, value=None, mask=None, cache: "LayerKVCache | None" = None):
        """cache（第 13 章）：一层的 KV 缓存。给了它，本次算出的 k、v 先接在缓存里已有的 P 个位置后面，
        再做注意力：键的长度 S = P + 本次的长度，mask 也要按这个 S 给（(T, P + T) 等）；缓存随之变长。"""
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
                got = describe_shape(x)
                raise ValueError(f"{name} 的形状应为 (B, 长度, {self.d_model})（批在前），实际为 {got}。")
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ValueError(
                f"query、key、value 的批大小须相同，key 与 value 的长度须相同："
                f"query {describe_shape(query)}，key {describe_shape(key)}，value {describe_shape(value)}。"
            )
        if cache is not None and not isinstance(cache, LayerKVCache):
            raise ValueError(f"cache 应为 LayerKVCache（KVCache 的一层）或 None，实际得到 {type(cache).__name__}。")
        q = self._split(self.q_proj(query))                    # (B, H, T, D)
        k = self._split(self.k_proj(key))                      # (B, H, S, D)
        v = self._split(self.v_proj(value))                    # (B, H, S, D)
        if cache is not None:
            k, v = cache.append(k, v)                          # (B, H, P + S, D)：接在已缓存的位置后面
        B, T, S = query.shape[0], query.shape[1], k.shape[2]
        if mask is not None:
            _check_mask(mask, (B, T, S) if mask.dim() <= 3 else (B, 1, T, S))
            if mask.dim() == 3:
                mask = mask[:, None]                            # (B, T, S) -> (B, 1, T, S)：所有头共用
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout=self.dropout)   # (B, H, T, D)
        out = out.transpose(1, 2).reshape(B, T, self.d_model)  # (B, H, T, D) -> (B, T, C)：拼接各头
        return self.out_proj(out), weights

    @torch.no_grad()
    def load_torch_weights(self, other: nn.MultiheadAttention) -> "MultiHeadAttention":
        """把 torch.nn.MultiheadAttention 的权重抄过来（它把 Q/K/V 三个投影叠在 in_proj_weight 里）。"""
        if not isinstance(other, nn.MultiheadAttention):
            raise ValueError(f"需要 torch.nn.MultiheadAttention，实际得到 {type(other).__name__}。")
        if (other.embed_dim, other.num_heads) != (self.d_model, self.n_heads):
            raise ValueError(
                f"两边的尺寸要一致：本模块 d_model={self.d_model}、n_heads={self.n_heads}，"
                f"torch 模块 embed_dim={other.embed_dim}、num_heads={other.num_heads}。"
            )
        if other.in_proj_weight is None:
            raise ValueError("torch 模块的 Q/K/V 维度不同（kdim/vdim），本课程的多头注意力不支持。")
        for proj, w in zip((self.q_proj, self.k_proj, self.v_proj), other.in_proj_weight.chunk(3)):
            proj.weight.copy_(w)
        if other.in_proj_bias is not None and self.q_proj.bias is not None:
            for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), other.in_proj_bias.chunk(3)):
                proj.bias.copy_(b)
        self.out_proj.load_state_dict(other.out_proj.state_dict())
        return self


# ---------------------------------------------------------------------------
# 第 13 章：KV 缓存
# ---------------------------------------------------------------------------

class LayerKVCache:
    """一层注意力的 KV 缓存：k、v 形状 (B, H, S, D)，S 是已经缓存的位置数；开始时为空（None）。"""

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def append(self, k: torch.Tensor, v: torch.Tensor):
        """把新位置的 k、v (B, H, T, D) 接在后面，返回接好的 (B, H, S + T, D) 两个张量。"""
        if self.k is None:
            self.k, self.v = k, v
        else:
            if k.shape[:2] != self.k.shape[:2] or k.shape[-1] != self.k.shape[-1]:
                raise ValueError(
                    f"新的 k 的形状 {describe_shape(k)} 与缓存里的 {describe_shape(self.k)} 不匹配"
                    "（批大小 B、头数 H、每头维数 D 须相同）。"
                )
            self.k = torch.cat([self.k, k], dim=2)             # (B, H, S + T, D)
            self.v = torch.cat([self.v, v], dim=2)
        return self.k, self.v

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]


class KVCache:
    """整个模型的 KV 缓存：每层一个 LayerKVCache。cache[i] 交给第 i 层的自注意力。

    length：已缓存的位置数；nbytes：全部 k、v 张量占的字节数（= 2 · L · B · H · D · S · 每个数的字节数）。
    """

    def __init__(self, n_layers: int):
        self.layers = [LayerKVCache() for _ in range(positive_int(n_layers, "n_layers"))]

    def __getitem__(self, i: int) -> LayerKVCache:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def length(self) -> int:
        return self.layers[0].length

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for layer in self.layers for t in (layer.k, layer.v) if t is not None)


# ---------------------------------------------------------------------------
# 第 16 章：分块注意力（在线 softmax）
# ---------------------------------------------------------------------------

def tiled_attention(q, k, v, mask=None, *, block_size: int = 64) -> torch.Tensor:
    """分块计算的缩放点积注意力：一次只看 block_size 个键，用在线 softmax（online softmax）累加。第 16 章引入。

    q: (..., T, D)；k: (..., S, D)；v: (..., S, D_v)；mask 与 `scaled_dot_product_attention` 相同
    （可广播到 (..., T, S) 的布尔张量，True 表示"可以看"），一个键都不许看的行输出 0 向量。
    每行记住到目前为止的最大打分 m、指数和 l 与未归一化的输出 acc；来了新的一块键，
    先把旧的 l、acc 乘上 exp(m_旧 − m_新) 换到新的参照点上，再加上这一块的贡献——
    这正是 FlashAttention 的做法。最大的临时张量是 (..., T, block_size)，从不组出 (T, S) 的权重，
    内存随 T 线性增长（前向；反向传播时 autograd 仍会存下每一块，FlashAttention 在反向时重算）。
    只返回输出 (..., T, D_v)（没有完整的权重矩阵可返回）。
    """
    _check_qkv(q, k, v)
    block_size = positive_int(block_size, "块大小 block_size")
    T, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])   # 打分的批维度，与 q @ kᵀ 相同
    if mask is not None:
        _check_mask(mask, (*batch, T, S))
    out_batch = torch.broadcast_shapes(batch, v.shape[:-2])
    kw = {"dtype": q.dtype, "device": q.device}
    m = torch.full((*batch, T, 1), float("-inf"), **kw)           # 每行到目前为止的最大打分
    l = torch.zeros((*batch, T, 1), **kw)                         # 每行 Σ exp(打分 − m)
    acc = torch.zeros((*out_batch, T, v.shape[-1]), **kw)         # 每行 Σ exp(打分 − m) · v
    for start in range(0, S, block_size):
        end = min(start + block_size, S)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(D)   # (..., T, b)
        if mask is not None:
            # 最后一维为 1 的掩码对所有键广播，不用切
            block_mask = mask if mask.dim() == 0 or mask.shape[-1] == 1 else mask[..., start:end]
            scores = scores.masked_fill(~block_mask, float("-inf"))
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))        # (..., T, 1)
        # 到这一块为止整行都被屏蔽时 m_new = −∞：拿 0 当参照，免得 (−∞) − (−∞) = NaN
        ref = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = torch.exp(scores - ref)                                         # (..., T, b)，被屏蔽的为 0
        correction = torch.exp(m - ref)                                     # 旧参照换到新参照
        l = l * correction + p.sum(dim=-1, keepdim=True)
        acc = acc * correction + p @ v[..., start:end, :]                  # (..., T, b) @ (..., b, D_v)
        m = m_new
    # 整行被屏蔽：l = 0、acc = 0，除以 1 得 0 向量（不用 where 挑 acc / l，那样 0/0 的 NaN 会进梯度）
    return acc / torch.where(l > 0, l, torch.ones_like(l))
