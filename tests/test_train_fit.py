"""train.fit：各章共用的训练循环（第 10 章引入；train_seq2seq、train_lm、fine_tune、fine_tune_lm 都调用它）。"""
import pytest
import torch
from torch import nn

from tfcourse.train import FitResult, fit, warmup_linear_lr


def _problem(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.1), nn.ReLU(), nn.Linear(16, 2))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 4, generator=g)
    y = (x[:, 0] > 0).long()
    return model, x, y


def test_fit_learns_and_records_the_schedule():
    """带 dropout 的小网络：fit 学会任务，记下的学习率就是 lr_at 给的日程。"""
    steps = 60
    lr_at = lambda s: warmup_linear_lr(s, 1e-2, 5, steps)       # noqa: E731
    model, x, y = _problem()
    rec = fit(model, lambda s: nn.functional.cross_entropy(model(x[s % 8::8]), y[s % 8::8]),
              steps=steps, lr_at=lr_at, progress=False)
    assert isinstance(rec, FitResult) and rec.steps == steps and len(rec.losses) == steps
    assert rec.lrs == [lr_at(s) for s in range(1, steps + 1)]
    assert (model.eval()(x).argmax(-1) == y).float().mean().item() > 0.9


def test_fit_matches_hand_loop_bit_for_bit_without_dropout():
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    b = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    b.load_state_dict(a.state_dict())
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(2))
    y = (x.sum(-1) > 0).long()
    lr_at = lambda s: 3e-2 / s                                   # noqa: E731
    rec = fit(a, lambda s: nn.functional.cross_entropy(a(x), y), steps=12, lr_at=lr_at, clip_norm=0.5,
              betas=(0.9, 0.95), weight_decay=0.1, progress=False)
    opt = torch.optim.AdamW(b.parameters(), lr=lr_at(1), betas=(0.9, 0.95), weight_decay=0.1)
    for s in range(1, 13):
        for gr in opt.param_groups:
            gr["lr"] = lr_at(s)
        loss = nn.functional.cross_entropy(b(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(list(b.parameters()), 0.5)
        opt.step()
        assert loss.item() == rec.losses[s - 1]
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_fit_eval_curve_mode_and_frozen_parameters():
    model, x, y = _problem()
    model[0].requires_grad_(False)
    frozen = model[0].weight.detach().clone()
    modes = []

    def val():
        modes.append(model.training)
        return (model(x).argmax(-1) == y).float().mean().item()

    model.eval()
    rec = fit(model, lambda s: nn.functional.cross_entropy(model(x), y), steps=25, lr_at=lambda s: 1e-2,
              eval_fn=val, eval_every=10, progress=False)
    assert rec.eval_steps == [10, 20, 25] and len(rec.evals) == 3       # 最后一步也验证
    assert modes == [False] * 3                                        # 验证在 eval 模式下
    assert not model.training                                          # 恢复调用前的模式
    assert torch.equal(model[0].weight, frozen)                        # 冻结的参数没动
    assert rec.seconds > 0 and rec.eval_seconds > 0


def test_fit_restores_threads_and_rejects_bad_input():
    model, x, y = _problem()
    before = torch.get_num_threads()
    fit(model, lambda s: nn.functional.cross_entropy(model(x), y), steps=2, lr_at=lambda s: 1e-3,
        num_threads=1, progress=False)
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="没有要训练的参数"):
        fit(model.requires_grad_(False), lambda s: None, steps=1, lr_at=lambda s: 1e-3, progress=False)
    with pytest.raises(ValueError, match="eval_every"):
        fit(model, lambda s: None, steps=1, lr_at=lambda s: 1e-3, eval_every=-1, progress=False)
    with pytest.raises(ValueError, match="steps"):
        fit(model, lambda s: None, steps=0, lr_at=lambda s: 1e-3, progress=False)
