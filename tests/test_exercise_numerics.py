"""练习检查器的容差来自数值本身：正确的 float32 答案在任何 CPU 上都通过，错误的写法照样被抓住。

这些测试标记为 numerics，make test 会在 torch 的另一条 CPU 代码路径（ATEN_CPU_CAPABILITY=avx2 与 default）
上再跑一遍。它们不比较某台机器的确切比特，而是要求 float32 答案的误差离容差有足够的余量（≤ 1/4）：
另一台 CPU 的 float32 舍入与这台的量级相同，余量保证它也通过。
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tfcourse.exercises import EXERCISES, allowed_error, check, float32_spread

pytestmark = pytest.mark.numerics

MARGIN = 0.25


def _to_float32(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_to_float32(v) for v in value)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.float()
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float32)
    if isinstance(value, nn.Module):
        return copy.deepcopy(value).float()
    return value


def _float32_reference(ex):
    """参考实现在 float32 里算一遍：每个浮点输入（数组、张量、模块的参数）都先转成 float32。"""
    def run(*args):
        return ex.reference(*_to_float32(args))
    return run


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _flat(v)]
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return [np.asarray(x)]


FLOAT_EXERCISES = sorted(
    eid for eid, ex in EXERCISES.items()
    if any(np.asarray(a).dtype.kind == "f" for a in _flat(ex.reference(*copy.deepcopy(ex.cases[0].args))))
)


@pytest.mark.parametrize("eid", FLOAT_EXERCISES)
def test_the_reference_computed_in_float32_passes_with_margin(eid):
    ex = EXERCISES[eid]
    result = check(eid, _float32_reference(ex))
    assert result.passed, result.summary()
    worst = 0.0
    for i, case in enumerate(ex.cases, start=1):
        expected = ex.reference(*copy.deepcopy(case.args))
        got = _float32_reference(ex)(*copy.deepcopy(case.args))
        spread = float32_spread(ex.reference, case.args, expected, seed=i)
        spreads = spread if isinstance(spread, tuple) else (spread,)
        for e, g, sp in zip(_flat(expected), _flat(got), spreads if len(spreads) == len(_flat(expected)) else [None] * len(_flat(expected))):
            if e.dtype.kind != "f" or not e.size:
                continue
            err = np.abs(np.asarray(g, dtype=np.float64) - e.astype(np.float64))
            worst = max(worst, float((err / allowed_error(e, ex.atol, ex.rtol, sp)).max()))
    assert worst <= MARGIN, f"{eid}：float32 误差用掉了容差的 {worst:.0%}（要求 ≤ {MARGIN:.0%}，留给别的 CPU）"


def _ch02_variants():
    def torch32(X, W_q, W_k, W_v):
        X, W_q, W_k, W_v = (torch.tensor(a, dtype=torch.float32) for a in (X, W_q, W_k, W_v))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        w = torch.softmax(Q @ K.T / Q.shape[-1] ** 0.5, dim=-1)
        return w @ V, w

    def sdpa32(X, W_q, W_k, W_v):
        X, W_q, W_k, W_v = (torch.tensor(a, dtype=torch.float32) for a in (X, W_q, W_k, W_v))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        w = torch.softmax(Q @ K.T / Q.shape[-1] ** 0.5, dim=-1)
        return F.scaled_dot_product_attention(Q[None], K[None], V[None])[0], w

    def numpy32(X, W_q, W_k, W_v):
        X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (X, W_q, W_k, W_v))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        s = Q @ K.T / np.float32(np.sqrt(Q.shape[-1]))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
        return w @ V, w

    def loops32(X, W_q, W_k, W_v):                      # 另一种求和顺序：逐项累加
        X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (X, W_q, W_k, W_v))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        T, S = Q.shape[0], K.shape[0]
        s = np.zeros((T, S), dtype=np.float32)
        for t in range(T):
            for j in range(S):
                acc = np.float32(0)
                for d in reversed(range(Q.shape[1])):
                    acc = np.float32(acc + Q[t, d] * K[j, d])
                s[t, j] = acc / np.float32(np.sqrt(Q.shape[1]))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
        return w @ V, w

    return {"torch": torch32, "sdpa": sdpa32, "numpy": numpy32, "loops": loops32}


@pytest.mark.parametrize("name", ["torch", "sdpa", "numpy", "loops"])
def test_every_float32_way_of_writing_self_attention_passes(name):
    result = check("ch02.self_attention", _ch02_variants()[name])
    assert result.passed, result.summary()


def test_the_tolerance_is_the_same_on_every_machine():
    """容差只由 float64 与固定种子算出：同一用例算两次完全一样，并且远小于错误写法造成的差。"""
    ex = EXERCISES["ch02.self_attention"]
    case = ex.cases[4]                                  # 打分上千的用例
    expected = ex.reference(*case.args)
    a = float32_spread(ex.reference, case.args, expected, seed=5)
    b = float32_spread(ex.reference, case.args, expected, seed=5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    allowed = allowed_error(expected[0], ex.atol, ex.rtol, a[0])
    assert allowed.max() < 1e-2                         # 错误写法差 0.1 量级
