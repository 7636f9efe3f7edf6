"""tfcourse.sampling：top-k / top-p 留下的集合与 transformers 的 TopKLogitsWarper / TopPLogitsWarper 相同。"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import pytest
import torch
from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

from tfcourse.sampling import (apply_sampling_rules, effective_k, sample_next, top_k_filter,
                               top_p_filter)

pytestmark = [pytest.mark.numerics, pytest.mark.usefixtures("one_thread")]


def _random_logits(seed):
    """各种形状的随机 logits：尖的、平的、带并列的（取整后大量相同的值）。"""
    g = torch.Generator().manual_seed(seed)
    B, V = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(2, 60, (1,), generator=g))
    scale = float(torch.empty(1).uniform_(0.1, 8.0, generator=g))
    x = torch.randn(B, V, generator=g) * scale
    if seed % 3 == 0:
        x = x.round()                                        # 并列
    if seed % 5 == 0:
        x[:, : V // 2] = x[:, :1]                            # 一半的值都一样
    return x


@pytest.mark.parametrize("seed", range(60))
def test_top_k_keeps_what_transformers_keeps(seed):
    x = _random_logits(seed)
    for k in (1, 2, 3, 7, x.shape[-1], x.shape[-1] + 5):
        ours = torch.isfinite(top_k_filter(x, k))
        theirs = torch.isfinite(TopKLogitsWarper(top_k=k)(None, x.clone()))
        assert torch.equal(ours, theirs), (seed, k)
        assert (ours.sum(-1) >= min(k, x.shape[-1])).all()   # 并列的都留下：至少 k 个


@pytest.mark.parametrize("seed", range(60))
def test_top_p_keeps_what_transformers_keeps(seed):
    x = _random_logits(seed)
    for p in (0.05, 0.3, 0.5, 0.9, 0.95, 0.999):
        ours = torch.isfinite(top_p_filter(x, p))
        theirs = torch.isfinite(TopPLogitsWarper(top_p=p)(None, x.clone()))
        assert torch.equal(ours, theirs), (seed, p)
    assert torch.isfinite(top_p_filter(x, 1.0)).all()        # p = 1：一个也不去掉


def test_top_p_is_the_smallest_set_reaching_p():
    x = torch.tensor([[3.0, 2.0, 1.0, 0.0, -1.0]])
    probs = x.softmax(-1)[0]                                 # 0.636 0.234 0.086 0.032 0.012
    for p, want in ((0.5, 1), (0.8, 2), (0.9, 3), (0.96, 4), (0.99, 5)):
        kept = torch.isfinite(top_p_filter(x, p))[0]
        assert int(kept.sum()) == want, p
        assert probs[kept].sum() >= p - 1e-6                 # 达到 p
        assert probs[kept][:-1].sum() < p                    # 少一个就不够
    assert effective_k(x, 0.9).tolist() == [3]


def test_removed_entries_are_minus_infinity_and_kept_are_unchanged():
    x = torch.tensor([[1.0, 5.0, 5.0, 2.0]])
    out = top_k_filter(x, 1)
    assert out.tolist() == [[float("-inf"), 5.0, 5.0, float("-inf")]]   # 并列第一都留下
    y = apply_sampling_rules(x, temperature=2.0, top_k=3, top_p=0.5)
    assert torch.isinf(y[0, 0]) and y[0, 1] == 2.5


def test_sample_next_draws_only_kept_tokens_and_greedy_at_zero():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 30, generator=g)
    draws = torch.stack([sample_next(x, 1.0, top_k=3, generator=g) for _ in range(200)])   # (200, 4)
    kept = torch.isfinite(top_k_filter(x, 3))
    assert all(kept[b, draws[:, b]].all() for b in range(4))
    assert torch.equal(sample_next(x, 0.0), x.argmax(-1))
    same = [sample_next(x, 0.7, generator=torch.Generator().manual_seed(5)) for _ in range(2)]
    assert torch.equal(*same)                                # 同一个种子，同样的抽样


@pytest.mark.parametrize("call, message", [
    (lambda x: top_k_filter(x, 0), "top_k 应为 ≥ 1 的整数"),
    (lambda x: top_k_filter(x, 2.5), "top_k 应为 ≥ 1 的整数"),
    (lambda x: top_p_filter(x, 0.0), r"top_p 应在 \(0, 1\] 之内"),
    (lambda x: top_p_filter(x, 1.5), r"top_p 应在 \(0, 1\] 之内"),
    (lambda x: sample_next(x, -0.1), "temperature 应为 ≥ 0"),
    (lambda x: top_k_filter(x.long(), 2), "浮点"),
])
def test_bad_input_is_a_chinese_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call(torch.randn(2, 5))
