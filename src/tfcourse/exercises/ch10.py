"""第 10 章的练习：带标签平滑的交叉熵、一句话的贪心解码。"""
from __future__ import annotations

import torch

from ..decode import greedy_decode
from ..model import TINY, Transformer
from ..train import label_smoothed_cross_entropy
from . import Case, Exercise, register

BOS_ID, EOS_ID, PAD_ID = 1, 2, 0          # 与 tfcourse.data.numerals 相同


# ---------------------------------------------------------------- 练习 A：标签平滑的交叉熵

def _cases_label_smoothing() -> tuple[Case, ...]:
    g = torch.Generator().manual_seed(10086)
    logits_2d = torch.randn(6, 5, generator=g, dtype=torch.float64)
    target_2d = torch.randint(0, 5, (6,), generator=g)
    target_2d[0] = 0                                        # 类别 0 在这里是真答案：ignore_index 是 −100，不能把 0 扔掉
    logits_3d = torch.randn(3, 7, 18, generator=g, dtype=torch.float64)               # (B, T, V)
    target_3d = torch.randint(3, 18, (3, 7), generator=g)
    target_3d[0, 5:], target_3d[1, 3:] = PAD_ID, PAD_ID                                # 右侧补齐
    big = 80.0 * torch.randn(4, 6, generator=g)                                        # 很大的 logits（float32）
    big_target = torch.tensor([0, 5, 2, 3])
    return (
        Case((logits_2d, target_2d, 0.0, -100), "ε = 0：就是普通的交叉熵（没有要忽略的位置）"),
        Case((logits_2d, target_2d, 0.1, -100), "ε = 0.1，(N, V) 的 logits"),
        Case((logits_3d, target_3d, 0.1, PAD_ID), "ε = 0.1，(B, T, V) 的 logits，填充位置（编号 0）不计入"),
        Case((logits_3d, target_3d, 0.0, PAD_ID), "ε = 0，带填充：平均只在真 token 上取"),
        Case((logits_3d, target_3d, 1.0, PAD_ID), "ε = 1：目标完全是均匀分布"),
        Case((big, big_target, 0.2, -100), "很大的 logits（先 softmax 再取 log 会得到 −inf）"),
    )


def _generate_label_smoothing(rng) -> tuple[Case, ...]:
    """隐藏用例：ε = 0、(N, V)、(B, T, V) 带填充、ε = 0 带填充、ε = 1、很大的 logits（float32）。"""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    N, V = int(rng.integers(2, 10)), int(rng.integers(3, 12))
    logits_2d = torch.randn(N, V, generator=g, dtype=torch.float64)
    target_2d = torch.randint(0, V, (N,), generator=g)
    target_2d[0] = 0                                        # 类别 0 是真答案：只忽略 ignore_index
    B, T, V3 = int(rng.integers(2, 5)), int(rng.integers(2, 9)), int(rng.integers(4, 20))
    logits_3d = torch.randn(B, T, V3, generator=g, dtype=torch.float64)
    target_3d = torch.randint(3, V3, (B, T), generator=g)
    target_3d[1, int(rng.integers(1, T)):] = PAD_ID                                   # 第 2 句右侧补齐
    big = float(rng.uniform(50, 120)) * torch.randn(N, V, generator=g)
    eps = float(rng.uniform(0.05, 0.4))
    return (
        Case((logits_2d, target_2d, 0.0, -100), "ε = 0：普通的交叉熵"),
        Case((logits_2d, target_2d, eps, -100), "0 < ε < 1，(N, V) 的 logits"),
        Case((logits_3d, target_3d, eps, PAD_ID), "(B, T, V) 的 logits，填充位置不计入"),
        Case((logits_3d, target_3d, 0.0, PAD_ID), "ε = 0，带填充：平均只在真 token 上取"),
        Case((logits_3d, target_3d, 1.0, PAD_ID), "ε = 1：目标完全是均匀分布"),
        Case((big, target_2d, eps, -100), "很大的 logits（float32）"),
    )


def _reference_label_smoothing(logits, target, smoothing, ignore_index):
    return label_smoothed_cross_entropy(logits, target, smoothing, ignore_index)


register("ch10.label_smoothed_ce", Exercise(
    title="实现带标签平滑的交叉熵（忽略填充位置）",
    reference=_reference_label_smoothing,
    cases=_cases_label_smoothing(),
    generate=_generate_label_smoothing,
))


# ---------------------------------------------------------------- 练习 B：一句话的贪心解码

def _tiny_model(seed: int, eos_bias: float = 0.0) -> Transformer:
    """随机初始化的小模型（输出层不与词向量绑定、带偏置）；eos_bias 加在 <eos> 的偏置上，让它更早生成 <eos>。"""
    torch.manual_seed(seed)
    model = Transformer(TINY.replace(src_vocab_size=11, tgt_vocab_size=18, tie_output=False)).eval()
    with torch.no_grad():
        model.generator.bias[EOS_ID] += eos_bias
    return model


def _cases_greedy() -> tuple[Case, ...]:
    n10086 = torch.tensor([[2, 1, 1, 9, 7]])                    # 数字 1 0 0 8 6 的编号（'0' → 1 … '9' → 10）
    return (
        Case((_tiny_model(3), n10086, 12), "随机小模型，源序列 10086，max_len = 12（一直没生成 <eos>）"),
        Case((_tiny_model(0, eos_bias=1.0), n10086, 10), "第 4 步生成 <eos>：<eos> 之后就停"),
        Case((_tiny_model(3, eos_bias=6.0), n10086, 10), "第一步就生成 <eos>"),
        Case((_tiny_model(3, eos_bias=3.0), n10086, 5), "max_len = 5：还没生成 <eos> 就到了长度上限"),
        Case((_tiny_model(0, eos_bias=0.5), torch.tensor([[8]]), 9), "只有 1 位数字（7）"),
    )


def _generate_greedy(rng) -> tuple[Case, ...]:
    """隐藏用例：一直没生成 <eos>、中途生成 <eos>、第一步就是 <eos>、长度上限很短、只有 1 位数字。"""
    def seed():
        return int(rng.integers(2 ** 31))

    def src(n):
        return torch.as_tensor(rng.integers(1, 11, size=(1, n)), dtype=torch.int64)

    with torch.random.fork_rng(devices=[]):
        return (
            Case((_tiny_model(seed(), eos_bias=-20.0), src(int(rng.integers(2, 7))), int(rng.integers(6, 14))),
                 "一直没生成 <eos>：到长度上限为止"),
            Case((_tiny_model(seed(), eos_bias=float(rng.uniform(0.5, 2.0))), src(int(rng.integers(2, 7))), 12),
                 "随机小模型：生成到 <eos> 或长度上限"),
            Case((_tiny_model(seed(), eos_bias=20.0), src(int(rng.integers(2, 7))), 10), "第一步就生成 <eos>"),
            Case((_tiny_model(seed(), eos_bias=-20.0), src(int(rng.integers(2, 7))), int(rng.integers(1, 4))),
                 "长度上限很短"),
            Case((_tiny_model(seed()), src(1), int(rng.integers(4, 10))), "只有 1 位数字"),
        )


def _reference_greedy(model, src, max_len):
    return greedy_decode(model, src, BOS_ID, EOS_ID, max_len=max_len)[0]


register("ch10.greedy_one", Exercise(
    title="用 encode / decode 为一个数贪心解码",
    reference=_reference_greedy,
    cases=_cases_greedy(),
    generate=_generate_greedy,
))
