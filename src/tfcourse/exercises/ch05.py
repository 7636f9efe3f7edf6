"""第 5 章的练习：正弦位置编码表、偏移 k 对应的旋转矩阵。"""
from __future__ import annotations

from .. import positional
from . import Case, Exercise, register


def _cases_pe() -> tuple[Case, ...]:
    return (
        Case((50, 16), "max_len=50，d_model=16"),
        Case((1, 8), "只有 1 个位置（p = 0：sin 全为 0、cos 全为 1）"),
        Case((10, 2), "d_model=2：只有一对维度"),
        Case((7, 6), "d_model=6：维度对的个数是奇数"),
        Case((100, 128), "max_len=100，d_model=128（最慢的一对维度几乎不动）"),
    )


def _cases_rotation() -> tuple[Case, ...]:
    return (
        Case((1, 4), "k=1，d_model=4"),
        Case((0, 8), "k=0：不移动（应为单位矩阵）"),
        Case((5, 2), "k=5，d_model=2：只有一个 2×2 块"),
        Case((-3, 16), "k=−3：往回移"),
        Case((12, 64), "k=12，d_model=64"),
    )


register("ch05.sinusoidal_pe", Exercise(
    title="实现正弦位置编码表 (max_len, d_model)",
    reference=positional.sinusoidal_positional_encoding,
    cases=_cases_pe(),
    atol=1e-4,          # 允许用 float32 计算角度（p·ω 可达上百，float32 的舍入约 1e-5）
))
register("ch05.relative_rotation", Exercise(
    title="实现偏移 k 对应的旋转矩阵 R_k，使 PE(p + k) = R_k · PE(p)",
    reference=positional.relative_rotation,
    cases=_cases_rotation(),
    atol=1e-5,
))
