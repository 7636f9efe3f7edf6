"""附录 A 练习的检查：参考实现通过（公开与隐藏用例），并且与 transformers 的 repeat_kv 一致；常见的错误写法
（组按"轮流"而不是"连续"分配、忘了除以 √D、除以 √(H·D)、只用第 0 组）被抓住。"""
import math

import numpy as np
import pytest
import torch

from tfcourse.exercises import EXERCISES, check

ID = "ch17.gqa_scores"


def test_reference_passes_and_equals_transformers_repeat_kv():
    ml = pytest.importorskip("transformers.models.llama.modeling_llama")
    ex = EXERCISES[ID]
    assert check(ID, ex.reference).passed
    assert check(ID, ex.reference, cases=ex.generate(np.random.default_rng(0))).passed
    q, k = torch.randn(8, 3, 4, dtype=torch.float64), torch.randn(2, 5, 4, dtype=torch.float64)
    k_rep = ml.repeat_kv(k[None], 4)[0]                          # transformers：(B, G, S, D) -> (B, H, S, D)
    torch.testing.assert_close(ex.reference(q, k), q @ k_rep.transpose(-2, -1) / 2.0)


def _round_robin(q, k):                                          # 头 h 用第 h % G 组：分组方式错了
    H, G = q.shape[0], k.shape[0]
    return q @ k[torch.arange(H) % G].transpose(-2, -1) / math.sqrt(q.shape[-1])


def _unscaled(q, k):
    return q @ k.repeat_interleave(q.shape[0] // k.shape[0], 0).transpose(-2, -1)


def _wrong_scale(q, k):
    return _unscaled(q, k) / math.sqrt(q.shape[0] * q.shape[-1])


def _first_group(q, k):
    return q @ k[:1].transpose(-2, -1) / math.sqrt(q.shape[-1])


def test_typical_wrong_answers_fail():
    for wrong in (_round_robin, _unscaled, _wrong_scale, _first_group):
        assert not check(ID, wrong).passed, wrong.__name__
        cases = EXERCISES[ID].generate(np.random.default_rng(1))
        assert not check(ID, wrong, cases=cases).passed, wrong.__name__
