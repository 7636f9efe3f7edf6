"""附录 B 的练习：ZeRO 的各档里，每个进程要存多少字节的模型状态。

my_per_rank_bytes(n_params, world, stage, param_bytes, grad_bytes, optim_bytes) → 一个数：
stage 0（DDP）什么都不切；1 切优化器状态；2 再切梯度；3 连参数也切（FSDP）。切开的部分每个进程存 1/world。"""
from __future__ import annotations

from . import Case, Exercise, register


def _reference_per_rank_bytes(n_params, world, stage, param_bytes, grad_bytes, optim_bytes):
    p = n_params * param_bytes / (world if stage >= 3 else 1)
    g = n_params * grad_bytes / (world if stage >= 2 else 1)
    o = n_params * optim_bytes / (world if stage >= 1 else 1)
    return float(p + g + o)


def _cases() -> tuple[Case, ...]:
    return (
        Case((7e9, 8, 0, 2, 2, 12), "DDP（stage 0）：每个进程存全部 16 字节/参数"),
        Case((7e9, 8, 1, 2, 2, 12), "ZeRO-1：只切优化器状态"),
        Case((7e9, 8, 2, 2, 2, 12), "ZeRO-2：再切梯度"),
        Case((7e9, 8, 3, 2, 2, 12), "ZeRO-3 / FSDP：参数也切"),
        Case((917504, 2, 1, 4, 4, 8), "全 float32 的 gpt-zh，两个进程，ZeRO-1"),
        Case((1e6, 1, 3, 2, 2, 12), "只有 1 个进程：切了也还是全部"),
    )


def _generate(rng) -> tuple[Case, ...]:
    """隐藏用例：四档各一个，参数个数、进程数、每个参数各部分的字节数随机。"""
    out = []
    for stage, name in enumerate(("DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3")):
        psi = float(rng.integers(10 ** 5, 10 ** 11))
        world = int(rng.choice([2, 3, 4, 8, 16, 64]))
        pb, gb, ob = (int(rng.choice(c)) for c in ([2, 4], [2, 4], [4, 8, 12, 16]))
        out.append(Case((psi, world, stage, pb, gb, ob), name))
    return tuple(out)


register("ch18.per_rank_bytes", Exercise(
    title="ZeRO 的每一档：每个进程存多少字节的模型状态",
    reference=_reference_per_rank_bytes,
    cases=_cases(),
    generate=_generate,
))
