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


def _generate_pe(rng) -> tuple[Case, ...]:
    """隐藏用例：只有 1 个位置、d_model = 2、维度对的个数是奇数、随机、较长较宽。"""
    return (
        Case((1, 2 * int(rng.integers(1, 9))), "只有 1 个位置"),
        Case((int(rng.integers(2, 30)), 2), "d_model = 2：只有一对维度"),
        Case((int(rng.integers(2, 30)), 2 * int(rng.choice([1, 3, 5, 7, 9]))), "维度对的个数是奇数"),
        Case((int(rng.integers(2, 60)), 2 * int(rng.integers(1, 32))), "随机的 max_len 与 d_model"),
        Case((int(rng.integers(100, 200)), 2 * int(rng.integers(32, 96))), "较长、较宽的编码表"),
    )


def _generate_rotation(rng) -> tuple[Case, ...]:
    """隐藏用例：k = 0、往回移、d_model = 2、随机、较大的 k。"""
    def d():
        return 2 * int(rng.integers(1, 17))

    return (
        Case((0, d()), "k = 0：不移动（应为单位矩阵）"),
        Case((-int(rng.integers(1, 20)), d()), "k < 0：往回移"),
        Case((int(rng.integers(1, 20)), 2), "d_model = 2：只有一个 2×2 块"),
        Case((int(rng.integers(1, 20)), d()), "随机的 k 与 d_model"),
        Case((int(rng.integers(50, 500)), d()), "较大的 k"),
    )


register("ch05.sinusoidal_pe", Exercise(
    title="实现正弦位置编码表 (max_len, d_model)",
    reference=positional.sinusoidal_positional_encoding,
    cases=_cases_pe(),
    atol=1e-4,          # 允许用 float32 计算角度（p·ω 可达上百，float32 的舍入约 1e-5）
    generate=_generate_pe,
))
register("ch05.relative_rotation", Exercise(
    title="实现偏移 k 对应的旋转矩阵 R_k，使 PE(p + k) = R_k · PE(p)",
    reference=positional.relative_rotation,
    cases=_cases_rotation(),
    atol=1e-5,
    generate=_generate_rotation,
))
