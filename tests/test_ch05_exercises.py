"""第 5 章练习的检查：参考实现通过；三个经典错误（指数用 i、sin/cos 对调、前后两半拼接）和转置的旋转都会被抓住。"""
import math

import numpy as np
import torch

from tfcourse import positional
from tfcourse.exercises import EXERCISES, check


# ---------------------------------------------------------------- 练习 A：正弦位置编码表

def _pe_numpy(max_len, d_model, *, exponent="2i", swap=False, halves=False):
    """numpy 写法；关键字参数用来制造经典错误。"""
    p = np.arange(max_len)[:, None]                                    # (L, 1)
    i = np.arange(d_model // 2)[None, :]                               # (1, d/2)
    power = 2 * i / d_model if exponent == "2i" else i / d_model
    angles = p / 10000.0 ** power                                      # (L, d/2)
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    if halves:
        return np.concatenate([first(angles), second(angles)], axis=1)  # 前一半 sin、后一半 cos
    pe = np.empty((max_len, d_model))
    pe[:, 0::2], pe[:, 1::2] = first(angles), second(angles)
    return pe


def _pe_torch_float32(max_len, d_model):
    """常见的 torch 写法：全程 float32（角度的舍入误差约 1e-5），应当通过。"""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def test_reference_and_correct_variants_pass():
    n = len(EXERCISES["ch05.sinusoidal_pe"].cases)
    for fn in (positional.sinusoidal_positional_encoding, _pe_numpy, _pe_torch_float32):
        result = check("ch05.sinusoidal_pe", fn)
        assert result.passed and result.n_passed == result.n_cases == n, result.summary()


def test_hidden_cases_cover_the_edge_cases():
    args = [c.args for c in EXERCISES["ch05.sinusoidal_pe"].cases]
    assert (1, 8) in args                                             # max_len = 1
    assert any(d == 2 for _, d in args) and any(d == 128 for _, d in args)


def test_i_instead_of_2i_in_the_exponent_fails_on_large_d_model():
    result = check("ch05.sinusoidal_pe", lambda L, d: _pe_numpy(L, d, exponent="i"))
    assert not result.passed
    assert any("d_model=128" in m and "数值不对" in m for m in result.messages)
    assert not any("d_model=2：" in m for m in result.messages)        # 只有一对维度时 i = 2i = 0，看不出来


def test_swapped_sin_and_cos_fails_every_case():
    result = check("ch05.sinusoidal_pe", lambda L, d: _pe_numpy(L, d, swap=True))
    assert not result.passed and result.n_passed == 0
    assert any("只有 1 个位置" in m for m in result.messages)


def test_concatenated_halves_instead_of_interleaving_fails():
    result = check("ch05.sinusoidal_pe", lambda L, d: _pe_numpy(L, d, halves=True))
    assert not result.passed
    assert any("d_model=16" in m and "数值不对" in m for m in result.messages)
    assert not any("d_model=2：" in m for m in result.messages)        # 一对维度时两种排法相同


def test_transposed_table_reports_the_shape():
    result = check("ch05.sinusoidal_pe", lambda L, d: _pe_numpy(L, d).T)
    assert not result.passed and any("形状不对" in m for m in result.messages)


# ---------------------------------------------------------------- 练习 B：旋转矩阵 R_k

def _rotation(k, d_model, *, transpose=False, halves=False):
    omega = 1.0 / 10000.0 ** (np.arange(0, d_model, 2) / d_model)     # (d/2,)
    c, s = np.cos(k * omega), np.sin(k * omega)
    R = np.zeros((d_model, d_model))
    idx_sin = np.arange(d_model // 2) if halves else np.arange(0, d_model, 2)
    idx_cos = idx_sin + d_model // 2 if halves else idx_sin + 1
    R[idx_sin, idx_sin], R[idx_sin, idx_cos] = c, s                   # sin(a+b) = sin a cos b + cos a sin b
    R[idx_cos, idx_sin], R[idx_cos, idx_cos] = -s, c                  # cos(a+b) = cos a cos b − sin a sin b
    return R.T if transpose else R


def test_rotation_reference_and_numpy_version_pass():
    for fn in (positional.relative_rotation, _rotation):
        result = check("ch05.relative_rotation", fn)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_numpy_rotation_really_shifts_the_table():
    pe = positional.sinusoidal_positional_encoding(40, 16).double().numpy()
    R = _rotation(7, 16)
    np.testing.assert_allclose(pe[:-7] @ R.T, pe[7:], atol=1e-6)


def test_transposed_rotation_moves_the_wrong_way_and_fails():
    result = check("ch05.relative_rotation", lambda k, d: _rotation(k, d, transpose=True))
    assert not result.passed
    assert not any("k=0" in m for m in result.messages)               # k = 0 时转置也是单位矩阵
    assert any("k=1，" in m and "数值不对" in m for m in result.messages)


def test_rotation_in_the_halves_layout_fails():
    result = check("ch05.relative_rotation", lambda k, d: _rotation(k, d, halves=True))
    assert not result.passed
    assert any("d_model=4" in m for m in result.messages)


def test_identity_for_every_k_fails():
    result = check("ch05.relative_rotation", lambda k, d: np.eye(d))
    assert not result.passed and result.n_passed == 1                 # 只有 k = 0 碰巧对
