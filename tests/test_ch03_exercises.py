"""第 3 章练习的检查：参考实现通过；常见的错误写法被抓住，而且给出有用的中文说明。"""
import math

import numpy as np
import torch

from tfcourse import attention
from tfcourse.exercises import EXERCISES, check


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))   # (..., T, S)


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch03.masked_attention", "ch03.causal_mask", "ch03.padding_mask"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_hidden_cases_cover_the_edge_cases_the_chapter_promises():
    cases = EXERCISES["ch03.masked_attention"].cases
    masks = [c.args[3] for c in cases]
    assert any(bool(m.all()) for m in masks)                                    # 不加掩码（全 True）
    assert any(m.dim() == 2 and torch.equal(m, attention.causal_mask(m.shape[-1])) for m in masks)
    assert any(m.dim() == 3 and m.shape[1] == 1 for m in masks)                # 填充掩码 (B, 1, S)
    assert any(c.args[0].dim() == 4 for c in cases)                            # (B, H, T, D)
    fully_masked = [c for c in cases if not bool(c.args[3].any(dim=-1).all())]
    assert fully_masked                                                        # 有整行都不许看的用例
    out, w = attention.scaled_dot_product_attention(*fully_masked[0].args)
    assert torch.isfinite(out).all() and (w.sum(-1) == 0).any()
    assert any(int(c.args[0].min()) == 0 for c in EXERCISES["ch03.padding_mask"].cases)   # 长度为 0 的句子
    assert any(c.args[0] == 1 for c in EXERCISES["ch03.causal_mask"].cases)                  # T = 1


def test_naive_minus_inf_softmax_fails_only_on_the_fully_masked_row_with_a_nan_message():
    def naive(q, k, v, mask):
        weights = _scores(q, k).masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return weights @ v, weights

    result = check("ch03.masked_attention", naive)
    assert not result.passed and result.n_passed == result.n_cases - 1
    assert len(result.messages) == 1
    assert "整行" in result.messages[0] and "NaN" in result.messages[0]


def test_big_negative_number_gives_uniform_rows_and_fails():
    def big_negative(q, k, v, mask):
        weights = _scores(q, k).masked_fill(~mask, -1e9).softmax(dim=-1)   # 整行被屏蔽时变成均匀分布
        return weights @ v, weights

    result = check("ch03.masked_attention", big_negative)
    assert not result.passed
    assert any("整行" in m and "数值不对" in m for m in result.messages)


def test_forgetting_to_scale_and_softmax_over_the_wrong_dim_fail():
    def unscaled(q, k, v, mask):
        weights = (q @ k.transpose(-2, -1)).masked_fill(~mask, float("-inf")).softmax(-1).nan_to_num(0.0)
        return weights @ v, weights

    def wrong_dim(q, k, v, mask):
        weights = _scores(q, k).masked_fill(~mask, float("-inf")).softmax(dim=-2).nan_to_num(0.0)
        return weights @ v, weights

    for fn in (unscaled, wrong_dim):
        result = check("ch03.masked_attention", fn)
        assert not result.passed and result.n_passed == 0, fn.__name__
        assert all("数值不对" in m for m in result.messages)


def test_inverted_mask_convention_fails():
    def inverted(q, k, v, mask):                       # 把 True 当成"不许看"（nn.MultiheadAttention 的约定）
        weights = _scores(q, k).masked_fill(mask, float("-inf")).softmax(-1).nan_to_num(0.0)
        return weights @ v, weights

    assert not check("ch03.masked_attention", inverted).passed


def test_off_by_one_causal_masks_fail():
    def strict(T):                                     # 连自己都不许看：少了对角线
        return torch.ones(T, T, dtype=torch.bool).tril(-1)

    def peeks_one_ahead(T):                            # 多看一个未来的词
        return torch.ones(T, T, dtype=torch.bool).tril(1)

    def upper(T):                                      # 方向反了
        return torch.ones(T, T, dtype=torch.bool).triu()

    for fn in (strict, peeks_one_ahead, upper):
        result = check("ch03.causal_mask", fn)
        assert not result.passed, fn.__name__
        assert any("数值不对" in m for m in result.messages)
    # T = 1 时"方向反了"恰好也对：隐藏用例里必须有更长的序列把它抓住
    assert check("ch03.causal_mask", upper).n_passed == 1


def test_padding_mask_mistakes_fail_with_useful_messages():
    def off_by_one(lengths, max_len):                  # <= 多算了一个位置
        return (torch.arange(max_len)[None, :] <= lengths[:, None])[:, None, :]

    def no_broadcast_axis(lengths, max_len):           # 忘了中间那一维：(B, S) 而不是 (B, 1, S)
        return torch.arange(max_len)[None, :] < lengths[:, None]

    r1 = check("ch03.padding_mask", off_by_one)
    assert not r1.passed and any("数值不对" in m for m in r1.messages)
    r2 = check("ch03.padding_mask", no_broadcast_axis)
    assert not r2.passed and r2.n_passed == 0 and all("形状不对" in m for m in r2.messages)


def test_stub_reports_not_implemented_without_crashing():
    def stub(*args):
        raise NotImplementedError("在这里写出你的实现")

    for exercise_id in ("ch03.masked_attention", "ch03.causal_mask", "ch03.padding_mask"):
        result = check(exercise_id, stub)
        assert result.n_passed == 0 and all("还没有实现" in m for m in result.messages)


def test_alternative_correct_solutions_pass():
    def where_solution(q, k, v, mask):
        scores = _scores(q, k).masked_fill(~mask, float("-inf"))
        any_allowed = mask.any(dim=-1, keepdim=True)
        weights = torch.where(any_allowed, scores.softmax(dim=-1), torch.zeros_like(scores))
        return weights @ v, weights

    assert check("ch03.masked_attention", where_solution).passed
    assert check("ch03.causal_mask", lambda T: torch.arange(T)[:, None] >= torch.arange(T)[None, :]).passed
    assert check("ch03.padding_mask", lambda L, S: (torch.arange(S) < L[:, None])[:, None]).passed
    # numpy 的布尔数组也按数值比较
    assert check("ch03.causal_mask", lambda T: np.tril(np.ones((T, T), dtype=bool))).passed
