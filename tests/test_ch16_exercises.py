"""第 16 章练习的检查：参考实现通过（公开与隐藏用例），并且与整行 softmax 一致；常见的错误写法
（忘了缩小旧的加权和、用这一块自己的最大值、不减最大值、缩放方向反了）被抓住。"""
import numpy as np
import torch

from tfcourse.exercises import EXERCISES, check

ID = "ch16.online_softmax_step"


def test_steps_over_all_blocks_give_the_full_softmax():
    step = EXERCISES[ID].reference
    g = torch.Generator().manual_seed(0)
    scores, values = torch.randn(5, 11, generator=g, dtype=torch.float64), torch.randn(11, 3, generator=g,
                                                                                      dtype=torch.float64)
    m, l, acc = torch.full((5,), float("-inf"), dtype=torch.float64), torch.zeros(5, dtype=torch.float64), \
        torch.zeros(5, 3, dtype=torch.float64)
    for j in range(0, 11, 4):                                  # 11 不是 4 的倍数
        m, l, acc = step(m, l, acc, scores[:, j:j + 4], values[j:j + 4])
    torch.testing.assert_close(acc / l[:, None], scores.softmax(-1) @ values)


def _no_acc_rescale(m, l, acc, scores, values):
    m_new = torch.maximum(m, scores.amax(-1))
    p = torch.exp(scores - m_new[:, None])
    return m_new, l * torch.exp(m - m_new) + p.sum(-1), acc + p @ values


def _block_max(m, l, acc, scores, values):
    mb = scores.amax(-1)
    p = torch.exp(scores - mb[:, None])
    return torch.maximum(m, mb), l + p.sum(-1), acc + p @ values


def _no_max(m, l, acc, scores, values):
    p = torch.exp(scores)
    return torch.maximum(m, scores.amax(-1)), l + p.sum(-1), acc + p @ values


def _inverted(m, l, acc, scores, values):
    m_new = torch.maximum(m, scores.amax(-1))
    corr = torch.exp(m_new - m).nan_to_num(0.0, posinf=0.0)
    p = torch.exp(scores - m_new[:, None])
    return m_new, l * corr + p.sum(-1), acc * corr[:, None] + p @ values


def test_typical_wrong_answers_fail():
    for wrong in (_no_acc_rescale, _block_max, _no_max, _inverted):
        assert not check(ID, wrong).passed, wrong.__name__
        cases = EXERCISES[ID].generate(np.random.default_rng(1))
        assert not check(ID, wrong, cases=cases).passed, wrong.__name__
