"""附录 B 练习的检查：参考实现通过（公开与隐藏用例），并且与实测的模型状态字节数一致；常见的错误写法
（档位错一格、切的是参数而不是优化器状态、忘了 1/N）被抓住。"""
import numpy as np
import torch

from tfcourse.exercises import EXERCISES, check

ID = "ch18.per_rank_bytes"


def test_reference_passes_and_matches_a_real_adamw_state():
    ex = EXERCISES[ID]
    assert check(ID, ex.reference).passed
    assert check(ID, ex.reference, cases=ex.generate(np.random.default_rng(0))).passed
    model = torch.nn.Linear(30, 20)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 30)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    state = sum(v.numel() * 4 for s in opt.state.values() for v in s.values() if v.dim() > 0)
    assert ex.reference(n, 1, 0, 4, 4, 8) == 4 * n + 4 * n + state     # 全 float32：DDP 时一个进程存的就是这些


def _off_by_one(n, w, stage, pb, gb, ob):
    return EXERCISES[ID].reference(n, w, min(stage + 1, 3), pb, gb, ob)


def _params_first(n, w, stage, pb, gb, ob):                      # 先切参数（顺序反了）
    p = n * pb / (w if stage >= 1 else 1)
    g = n * gb / (w if stage >= 2 else 1)
    o = n * ob / (w if stage >= 3 else 1)
    return p + g + o


def _no_division(n, w, stage, pb, gb, ob):
    return float(n * (pb + gb + ob))


def test_typical_wrong_answers_fail():
    for wrong in (_off_by_one, _params_first, _no_division):
        assert not check(ID, wrong).passed, wrong.__name__
        cases = EXERCISES[ID].generate(np.random.default_rng(1))
        assert not check(ID, wrong, cases=cases).passed, wrong.__name__
