"""第 15 章练习的检查：参考实现通过；常见的错误写法（忘了缩放、缩放写成 alpha 或 r / alpha、
漏了偏置、把冻结的 W 也乘上缩放、A 与 B 的顺序弄反）被抓住；参考实现与课程包的 LoRALinear 一致。"""
import numpy as np
import pytest
import torch
from torch import nn

from tfcourse.exercises import EXERCISES, check
from tfcourse.lora import LoRALinear

ID = "ch15.lora_forward"


def test_reference_equals_the_package_lora_linear():
    torch.manual_seed(0)
    base = nn.Linear(6, 5)
    layer = LoRALinear(base, r=3, alpha=6.0)
    with torch.no_grad():
        layer.lora_B.normal_()
    x = torch.randn(4, 6)
    got = EXERCISES[ID].reference(x, base.weight, base.bias, layer.lora_A, layer.lora_B, 6.0)
    torch.testing.assert_close(got, layer(x))


def _b(bias):
    return 0 if bias is None else bias


def _no_scaling(x, w, b, A, B, alpha):
    return x @ w.T + _b(b) + x @ A.T @ B.T


def _alpha_only(x, w, b, A, B, alpha):
    return x @ w.T + _b(b) + alpha * (x @ A.T @ B.T)


def _r_over_alpha(x, w, b, A, B, alpha):
    return x @ w.T + _b(b) + (A.shape[0] / alpha) * (x @ A.T @ B.T)


def _forgot_bias(x, w, b, A, B, alpha):
    return x @ w.T + (alpha / A.shape[0]) * (x @ A.T @ B.T)


def _scaled_everything(x, w, b, A, B, alpha):
    return (alpha / A.shape[0]) * (x @ w.T + _b(b) + x @ A.T @ B.T)


def _rank_from_B(x, w, b, A, B, alpha):
    return x @ w.T + _b(b) + (alpha / B.shape[0]) * (x @ A.T @ B.T)     # out 维当成了 r


@pytest.mark.parametrize("wrong", [_no_scaling, _alpha_only, _r_over_alpha, _forgot_bias,
                                   _scaled_everything, _rank_from_B])
def test_typical_mistakes_fail(wrong):
    assert not check(ID, wrong).passed
    cases = EXERCISES[ID].generate(np.random.default_rng(7))
    assert not check(ID, wrong, cases=cases).passed
