"""第 13 章练习的检查：参考实现通过；常见的错误写法（并列只留 k 个、温度乘错、先 softmax 再除温度、
去掉的候选没有归零）被抓住。"""
import numpy as np
import pytest
import torch

from tfcourse.exercises import EXERCISES, check

ID = "ch13.top_k_probs"


def _topk_exactly_k(logits, k, temperature):
    z = logits / temperature
    k = min(k, z.shape[-1])
    idx = z.topk(k, dim=-1).indices
    keep = torch.zeros_like(z, dtype=torch.bool).scatter(-1, idx, True)     # 并列的只留 k 个
    return keep, z.masked_fill(~keep, float("-inf")).softmax(-1)


def _times_temperature(logits, k, temperature):
    z = logits * temperature
    kth = z.topk(min(k, z.shape[-1]), dim=-1).values[..., -1:]
    return z >= kth, z.masked_fill(z < kth, float("-inf")).softmax(-1)


def _softmax_then_temperature(logits, k, temperature):
    p = logits.softmax(-1) ** (1 / temperature)                              # 没有重新归一化
    kth = p.topk(min(k, p.shape[-1]), dim=-1).values[..., -1:]
    return p >= kth, torch.where(p >= kth, p, 0.0)


def _not_renormalised(logits, k, temperature):
    p = (logits / temperature).softmax(-1)
    kth = p.topk(min(k, p.shape[-1]), dim=-1).values[..., -1:]
    return p >= kth, torch.where(p >= kth, p, 0.0)


def _naive_exp(logits, k, temperature):
    e = torch.exp(logits / temperature)                                      # 大打分溢出
    kth = e.topk(min(k, e.shape[-1]), dim=-1).values[..., -1:]
    keep = e >= kth
    e = torch.where(keep, e, 0.0)
    return keep, e / e.sum(-1, keepdim=True)


def _probs_only(logits, k, temperature):
    return _times_temperature(logits, k, 1.0)[1] if temperature == 1.0 else _times_temperature(logits, k, 1 / temperature)[1]


@pytest.mark.parametrize("wrong", [_topk_exactly_k, _times_temperature, _softmax_then_temperature,
                                   _not_renormalised, _naive_exp, _probs_only])
def test_typical_mistakes_fail(wrong):
    result = check(ID, wrong)
    assert not result.passed
    hidden = check(ID, wrong, cases=EXERCISES[ID].generate(np.random.default_rng(1)))
    assert not hidden.passed


def test_the_tie_case_names_the_problem():
    result = check(ID, _topk_exactly_k)
    assert any("并列" in m for m in result.messages)
