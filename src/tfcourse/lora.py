"""LoRA（低秩适配，Low-Rank Adaptation）：冻结原来的线性层，只训练一对小矩阵。第 15 章引入。

- `LoRALinear(base, r, alpha)`：输出 base(x) + (alpha / r) · x Aᵀ Bᵀ，A (r, in)、B (out, r)；
  B 从 0 开始，所以刚装上的适配器什么都不改变；
- `add_lora(model, r, alpha, targets)`：把属性名在 targets 里的 nn.Linear 换成 LoRALinear，冻结其余参数；
- `merge_lora(model)`：把每个适配器并回普通的 nn.Linear（W + (alpha / r) · B A），推理时不多花一次乘法；
- `trainable_parameters(model)`：(可训练的参数个数, 总参数个数)。

初始化与 peft 相同：A 取 kaiming-uniform（a = √5，与 nn.Linear 的权重一样），B 取 0。
形状记号：B 批，T 位置数，in / out 线性层的输入 / 输出维数，r 秩。
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import finite_number, positive_int

__all__ = ["LoRALinear", "add_lora", "merge_lora", "trainable_parameters"]


class LoRALinear(nn.Module):
    """给一个 nn.Linear 装上 LoRA 适配器：forward(x (..., in)) → base(x) + (alpha / r) · x Aᵀ Bᵀ (..., out)。

    底座 base 的参数被冻结（requires_grad=False），只有 lora_A (r, in) 与 lora_B (out, r) 可训练。
    """

    def __init__(self, base: nn.Linear, r: int, alpha: float):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise ValueError(f"LoRALinear 的底座 base 应为 nn.Linear，实际得到 {type(base).__name__}。")
        self.r = positive_int(r, "LoRA 的秩 r")
        alpha = finite_number(alpha, "LoRA 的缩放系数 alpha")
        if alpha <= 0:
            raise ValueError(f"LoRA 的缩放系数 alpha 应为正数，实际得到 {alpha}。")
        self.alpha = alpha
        self.scaling = alpha / self.r
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        kw = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.lora_A = nn.Parameter(torch.empty(self.r, base.in_features, **kw))    # (r, in)
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, self.r, **kw))   # (out, r)：从 0 开始
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # 先乘 A 降到 r 维、再乘 B 升回 out 维：从不组出 (out, in) 的 B A
        delta = (x @ self.lora_A.T) @ self.lora_B.T            # (..., in) -> (..., r) -> (..., out)
        return self.base(x) + self.scaling * delta

    def delta_weight(self) -> torch.Tensor:
        """适配器相当于给权重加上的 (alpha / r) · B A，形状 (out, in)。"""
        return self.scaling * (self.lora_B @ self.lora_A)

    def extra_repr(self) -> str:
        return f"r={self.r}, alpha={self.alpha:g}"


def _check_model(model, name: str = "model") -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"{name} 应为 torch.nn.Module，实际得到 {type(model).__name__}。")


def _children(model: nn.Module) -> list[tuple[nn.Module, str, nn.Module]]:
    """每个 (父模块, 属性名, 子模块)；同一个子模块挂在两个名字下时两处都列出（named_children 只给第一个）。"""
    return [(parent, name, child) for parent in model.modules()
            for name, child in list(parent._modules.items()) if child is not None]


def add_lora(model: nn.Module, r: int, alpha: float, targets) -> nn.Module:
    """把 model 里属性名在 targets 里的 nn.Linear 换成 LoRALinear（原地修改），冻结其余参数，返回 model。

    targets：属性名的集合，例如 {"q_proj", "v_proj"}（`attention.MultiHeadAttention` 里的名字）；
    按子模块的属性名匹配，不看它在模型里的完整路径，所以每一层的 q_proj 都会被换掉。
    """
    _check_model(model)
    if isinstance(targets, str):
        targets = {targets}
    try:
        targets = set(targets)
    except TypeError:
        raise ValueError(f"targets 应为属性名的集合（如 {{'q_proj', 'v_proj'}}），实际得到 {targets!r}。") from None
    if not targets or not all(isinstance(t, str) for t in targets):
        raise ValueError(f"targets 应为非空的属性名（字符串）集合，实际得到 {sorted(map(repr, targets))}。")
    positive_int(r, "LoRA 的秩 r")                             # 先检查，免得换到一半才出错
    if finite_number(alpha, "LoRA 的缩放系数 alpha") <= 0:
        raise ValueError(f"LoRA 的缩放系数 alpha 应为正数，实际得到 {alpha}。")
    found = [(parent, name, child) for parent, name, child in _children(model) if isinstance(child, nn.Linear)]
    missing = targets - {name for _, name, _ in found}
    if missing:
        have = sorted({name for _, name, _ in found})
        raise ValueError(
            f"targets 里的 {sorted(missing)} 在模型里找不到同名的 nn.Linear；"
            f"模型里的 nn.Linear 属性名有：{have if have else '（没有 nn.Linear）'}。"
        )
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped: dict[int, LoRALinear] = {}                        # 同一个线性层出现在两处时只装一个适配器
    for parent, name, child in found:
        if name in targets:
            if id(child) not in wrapped:
                wrapped[id(child)] = LoRALinear(child, r, alpha)
            setattr(parent, name, wrapped[id(child)])
    return model


@torch.no_grad()
def merge_lora(model: nn.Module) -> nn.Module:
    """把每个 LoRALinear 并成一个普通的 nn.Linear（权重 W + (alpha / r) · B A，偏置不变），返回 model。

    并好的线性层是新建的：与别处共享的底座权重（例如 GPT 里与词向量表共享的输出层）不会被改动。
    它的参数与底座一样冻结。model 本身就是 LoRALinear 时返回新的 nn.Linear。
    """
    _check_model(model)

    def merged(layer: LoRALinear) -> nn.Linear:
        base = layer.base
        out = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,
                        device=base.weight.device, dtype=base.weight.dtype)
        out.weight.copy_(base.weight + layer.delta_weight())
        if base.bias is not None:
            out.bias.copy_(base.bias)
        for p in out.parameters():
            p.requires_grad_(False)
        return out

    if isinstance(model, LoRALinear):
        return merged(model)
    done: dict[int, nn.Linear] = {}
    for parent, name, child in _children(model):
        if isinstance(child, LoRALinear):
            if id(child) not in done:
                done[id(child)] = merged(child)
            setattr(parent, name, done[id(child)])
    return model


def trainable_parameters(model: nn.Module) -> tuple[int, int]:
    """(可训练的参数个数, 总参数个数)；共享的参数（例如绑在一起的词向量与输出层）只数一次。"""
    _check_model(model)
    params = list(model.parameters())                          # parameters() 本身已经去掉了重复
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)
