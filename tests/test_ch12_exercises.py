"""第 12 章练习的检查：参考实现通过；常见的错误写法（把特殊 token 和填充也选上、标签没写 −100、
80/10/10 的分界弄反；平均时把填充算进去、除以总长度）被抓住。"""
import numpy as np
import pytest
import torch

from tfcourse.exercises import EXERCISES, check

IGNORE = -100


@pytest.mark.parametrize("exercise_id", ["ch12.mask_rule", "ch12.mean_pool"])
def test_reference_passes_public_and_generated_cases(exercise_id):
    ex = EXERCISES[exercise_id]
    result = check(exercise_id, ex.reference)
    assert result.passed and result.n_passed == result.n_cases, result.summary()
    for seed in range(3):
        cases = ex.generate(np.random.default_rng(seed))
        assert check(exercise_id, ex.reference, cases=cases).passed


def _rule(ids, u_choose, u_action, random_ids, mask_id, special_ids, p, *, skip_specials=True,
          labels_everywhere=False, swapped=False, le_boundary=False):
    chosen = u_choose < p
    if skip_specials:
        chosen &= ~torch.isin(ids, torch.tensor(list(special_ids)))
    labels = ids.clone() if labels_everywhere else torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    to_mask = (u_action < 0.1) if swapped else (u_action <= 0.8 if le_boundary else u_action < 0.8)
    to_random = (u_action >= 0.1) & (u_action < 0.9) if swapped else ~to_mask & (u_action < 0.9)
    inputs = torch.where(chosen & to_mask, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & to_random, random_ids, inputs)
    return inputs, labels


def test_a_correct_hand_written_rule_passes():
    assert check("ch12.mask_rule", _rule).passed


@pytest.mark.parametrize("wrong", [dict(skip_specials=False), dict(labels_everywhere=True), dict(swapped=True),
                                   dict(le_boundary=True)])
def test_typical_wrong_mask_rules_are_caught(wrong):
    result = check("ch12.mask_rule", lambda *a: _rule(*a, **wrong))
    assert not result.passed
    assert any("数值不对" in m for m in result.messages)


def test_mean_pool_wrong_answers_are_caught():
    def counts_padding(hidden, mask):
        return hidden.mean(dim=1)

    def divides_by_T(hidden, mask):
        m = mask.to(hidden.dtype)[..., None]
        return (hidden * m).sum(1) / hidden.shape[1]

    def right(hidden, mask):
        m = mask.to(hidden.dtype)[..., None]
        return (hidden * m).sum(1) / m.sum(1)

    assert check("ch12.mean_pool", right).passed
    for wrong in (counts_padding, divides_by_T):
        result = check("ch12.mean_pool", wrong)
        assert not result.passed and result.n_passed == 1     # 只有"没有填充"那个用例碰巧对
