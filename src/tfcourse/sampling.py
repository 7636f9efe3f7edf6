"""采样规则：温度（temperature）、top-k、top-p（核采样，nucleus sampling）。第 13 章引入。

- `top_k_filter(logits, k)`：只留打分最高的 k 个（与第 k 名打分相同的也留下）；
- `top_p_filter(logits, p)`：只留概率从大到小累加、刚好达到 p 的最小集合（至少留 1 个；p = 1 全留）；
- `apply_sampling_rules(logits, temperature, top_k, top_p)`：按 温度 → top-k → top-p 的顺序处理，
  与 transformers 的 generate 相同；`sample_next` 再从处理后的分布里抽一个；
- `effective_k(logits, p)`：top-p 在这一步实际留下了几个候选；
- `guide_logits(cond, uncond, scale)`：无分类器引导，uncond + scale·(cond − uncond)，与 transformers 的
  `ClassifierFreeGuidanceLogitsProcessor` 相同（第 15 章用它加强控制 token）。

被去掉的位置一律变成 −inf（softmax 之后概率为 0）。留下的集合与 transformers 的
`TopKLogitsWarper`、`TopPLogitsWarper` 相同（测试逐个比对）。logits 的形状是 (..., V)。
"""
from __future__ import annotations

import math

import torch

from ._checks import describe_shape, finite_number

__all__ = ["check_temperature", "check_top_k", "check_top_p", "top_k_filter", "top_p_filter",
           "apply_sampling_rules", "sample_next", "effective_k", "guide_logits"]


def _check_logits(logits) -> None:
    if not isinstance(logits, torch.Tensor) or logits.dim() < 1 or not logits.is_floating_point():
        raise ValueError(f"logits 应为至少 1 维的浮点 torch.Tensor（…, V），实际得到 {describe_shape(logits)}。")
    if logits.shape[-1] == 0:
        raise ValueError("logits 的最后一维（词表大小 V）不能为 0。")


def check_top_k(k) -> int:
    """top-k 的 k：正整数。"""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"top_k 应为 ≥ 1 的整数（留下打分最高的 k 个），实际为 {k!r}。")
    return k


def check_top_p(p) -> float:
    """top-p 的 p：在 (0, 1] 之内。"""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < float(p) <= 1.0:
        raise ValueError(f"top_p 应在 (0, 1] 之内（留下累计概率达到 p 的最小集合），实际为 {p!r}。")
    return float(p)


def check_temperature(temperature) -> float:
    """温度：≥ 0 的有限实数（0 表示贪心）。"""
    if (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
            or not math.isfinite(temperature) or temperature < 0):
        raise ValueError(f"temperature 应为 ≥ 0 的实数（0 表示贪心），实际为 {temperature!r}。")
    return float(temperature)


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """只留打分最高的 k 个，其余变成 −inf；与第 k 名打分相同的都留下（k > V 时全留）。"""
    _check_logits(logits)
    k = min(check_top_k(k), logits.shape[-1])
    kth = logits.topk(k, dim=-1).values[..., -1:]              # (..., 1)：第 k 名的打分
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """核采样：只留累计概率达到 p 的最小集合，其余变成 −inf。

    与 transformers 的 TopPLogitsWarper 相同的做法：从小到大排序，累计概率 ≤ 1 − p 的那些去掉，
    概率最大的那个总是留下；p = 1 时什么也不去掉。
    """
    _check_logits(logits)
    p = check_top_p(p)
    if p == 1.0:
        return logits.clone()
    sorted_logits, order = logits.sort(dim=-1)                 # 从小到大
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)         # (..., V)
    remove_sorted = cum <= 1.0 - p
    remove_sorted[..., -1] = False                             # 至少留下概率最大的一个
    remove = remove_sorted.scatter(-1, order, remove_sorted)   # 排回原来的顺序
    return logits.masked_fill(remove, float("-inf"))


def apply_sampling_rules(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                         top_p: float | None = None) -> torch.Tensor:
    """温度 → top-k → top-p，返回处理后的 logits（被去掉的为 −inf）。temperature 须 > 0。"""
    _check_logits(logits)
    temperature = check_temperature(temperature)
    if temperature == 0:
        raise ValueError("apply_sampling_rules 需要 temperature > 0；temperature = 0（贪心）直接取 argmax。")
    out = logits / temperature
    if top_k is not None:
        out = top_k_filter(out, top_k)
    if top_p is not None:
        out = top_p_filter(out, top_p)
    return out


def sample_next(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """从 (B, V) 的 logits 里每行抽一个 token，返回 (B,)。temperature = 0：贪心（取 argmax）。"""
    _check_logits(logits)
    if logits.dim() != 2:
        raise ValueError(f"sample_next 的 logits 应为 (B, V)，实际形状为 {describe_shape(logits)}。")
    temperature = check_temperature(temperature)
    if top_k is not None:
        check_top_k(top_k)
    if top_p is not None:
        check_top_p(top_p)
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = apply_sampling_rules(logits.float(), temperature, top_k, top_p).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


def effective_k(logits: torch.Tensor, p: float) -> torch.Tensor:
    """top-p 实际留下的候选个数 (...,)：分布越尖，留下的越少。"""
    return torch.isfinite(top_p_filter(logits, p)).sum(dim=-1)


def guide_logits(cond: torch.Tensor, uncond: torch.Tensor, scale: float) -> torch.Tensor:
    """无分类器引导（classifier-free guidance）：uncond + scale·(cond − uncond)，形状 (..., V)。

    cond 是在想要的提示之后的 logits，uncond 是在"反面提示"之后的。scale = 1 原样返回 cond 的分布；
    scale > 1 把分布往"cond 比 uncond 更看好的 token"那边推。logits 差一个常数不改变 softmax，
    所以用 logits 还是 log_softmax 算，得到的分布相同。"""
    _check_logits(cond)
    _check_logits(uncond)
    if cond.shape != uncond.shape:
        raise ValueError(f"cond 与 uncond 应同形状，实际为 {describe_shape(cond)} 与 {describe_shape(uncond)}。")
    return uncond + finite_number(scale, "引导强度 scale") * (cond - uncond)
