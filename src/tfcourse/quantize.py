"""int8 量化（quantization）：每个输出行一个缩放系数，把权重存成 −127…127 的整数。第 16 章引入。

- `quantize_int8(weight)` → (q, scale)：对称量化，scale = 该行最大绝对值 / 127，q = round(W / scale)；
- `dequantize(q, scale)`：q · scale，还原出的每个元素与原值相差至多半个台阶（scale / 2）；
- `quantize_model(model)`：模型的副本，每个 nn.Linear 的权重换成量化再还原后的值（模拟 int8：
  算的仍是浮点，但权重只取 int8 能表示的那些值），用来量量化让精度掉了多少；
- `int8_size_bytes(model)` / `float_size_bytes(model)`：两种存法各占多少字节。

形状记号：out 输出维数（权重的行数），in 输入维数。
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ._checks import describe_shape

__all__ = ["quantize_int8", "dequantize", "quantize_model", "int8_size_bytes", "float_size_bytes"]

QMAX = 127                                   # 对称量化只用 −127…127，不用 −128，让正负两边一样长
FLOAT_BYTES = 4                              # float32 每个数 4 字节
INT8_BYTES = 1


def quantize_int8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """对称的逐行 int8 量化：weight (out, in) → (q (out, in) int8，scale (out,)，与 weight 同 dtype)。

    一行全为 0 时 scale 取 1（q 全为 0，还原出来仍是 0，不会出现 0/0 的 NaN）。
    """
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError(f"weight 应为 2 维的 torch.Tensor（out, in），实际得到 {describe_shape(weight)}。")
    if not weight.is_floating_point():
        raise ValueError(f"weight 应为浮点张量，实际 dtype 为 {weight.dtype}。")
    if not torch.isfinite(weight).all():
        raise ValueError("weight 含有 NaN 或无穷大，无法量化。")
    w = weight.detach()
    scale = w.abs().amax(dim=1) / QMAX                                  # (out,)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))       # 全 0 的行（或小到下溢的行）
    # 除法在 float64 里做：scale 很小（非规格化数）时 float32 的商不够准
    q = torch.round(w.double() / scale.double()[:, None]).clamp_(-QMAX, QMAX)   # (out, in)
    return q.to(torch.int8), scale


def dequantize(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """还原：q (out, in) int8 · scale (out,) → (out, in)，dtype 与 scale 相同。"""
    if not isinstance(q, torch.Tensor) or q.dim() != 2 or q.dtype != torch.int8:
        raise ValueError(f"q 应为 2 维的 int8 张量（out, in），实际得到 {describe_shape(q)}、"
                         f"dtype {getattr(q, 'dtype', None)}。")
    if not isinstance(scale, torch.Tensor) or scale.shape != (q.shape[0],) or not scale.is_floating_point():
        raise ValueError(f"scale 应为形状 ({q.shape[0]},) 的浮点张量（每行一个），实际得到 {describe_shape(scale)}。")
    return q.to(scale.dtype) * scale[:, None]                           # (out, in) · (out, 1)


def _linear_weights(model: nn.Module) -> dict[int, nn.Linear]:
    """每个 nn.Linear 权重参数的 id → 它所在的层（共享的权重只记一次）。"""
    return {id(m.weight): m for m in model.modules() if isinstance(m, nn.Linear)}


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model 应为 torch.nn.Module，实际得到 {type(model).__name__}。")


@torch.no_grad()
def quantize_model(model: nn.Module) -> nn.Module:
    """返回 model 的深拷贝：每个 nn.Linear 的权重换成 dequantize(quantize_int8(W))（模拟 int8）。

    原模型不变。偏置、LayerNorm、词向量等其他参数保持浮点。与线性层共享的权重（GPT 的输出层与
    词向量表）也随之量化——真的存成 int8 时它也只存一份。拷贝上记下 int8_bytes 与 float_bytes。
    """
    _check_model(model)
    quantized = copy.deepcopy(model)
    for layer in _linear_weights(quantized).values():
        layer.weight.copy_(dequantize(*quantize_int8(layer.weight)))
    quantized.int8_bytes = int8_size_bytes(quantized)
    quantized.float_bytes = float_size_bytes(quantized)
    return quantized


def int8_size_bytes(model: nn.Module) -> int:
    """按 int8 存时的字节数：nn.Linear 的权重每个数 1 字节、每行再加一个 float32 的 scale，
    其余参数（偏置、LayerNorm、词向量……）每个数 4 字节。只数参数，不数缓冲区（buffer）；共享的参数只数一次。"""
    _check_model(model)
    linear = _linear_weights(model)
    total = 0
    for p in model.parameters():                                        # parameters() 已去掉重复
        if id(p) in linear:
            total += p.numel() * INT8_BYTES + p.shape[0] * FLOAT_BYTES
        else:
            total += p.numel() * FLOAT_BYTES
    return total


def float_size_bytes(model: nn.Module) -> int:
    """按 float32 存时的字节数：每个参数 4 字节（只数参数；共享的参数只数一次）。"""
    _check_model(model)
    return sum(p.numel() for p in model.parameters()) * FLOAT_BYTES
