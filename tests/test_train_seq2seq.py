"""train 的第 10 章部分：标签平滑的交叉熵与 torch 一致；两种预热学习率的形状；seq2seq 训练循环能学、可复现、
与手写的循环逐位相同。"""
import math

import pytest
import torch
from torch import nn

from tfcourse.data import numerals as N
from tfcourse.model import TINY, Transformer
from tfcourse.train import (Seq2SeqResult, label_smoothed_cross_entropy, noam_lr, train_seq2seq,
                            warmup_linear_lr)


pytestmark = pytest.mark.usefixtures("one_thread")     # 见 tests/conftest.py


# ---------------------------------------------------------------- 标签平滑

@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.35, 1.0])
@pytest.mark.parametrize("ignore_index", [None, 0])
def test_label_smoothing_equals_torch_cross_entropy_loss(smoothing, ignore_index):
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 9, 18, generator=g, requires_grad=True)                 # (B, T, V)
    target = torch.randint(1, 18, (4, 9), generator=g)
    target[1, 5:], target[3, 2:] = 0, 0                                              # 填充
    kwargs = {} if ignore_index is None else {"ignore_index": ignore_index}
    ref = nn.CrossEntropyLoss(label_smoothing=smoothing, **kwargs)(logits.flatten(0, 1), target.flatten())
    ours = label_smoothed_cross_entropy(logits, target, smoothing, ignore_index)
    torch.testing.assert_close(ours, ref)
    g_ref, = torch.autograd.grad(ref, logits)
    g_ours, = torch.autograd.grad(ours, logits)
    torch.testing.assert_close(g_ours, g_ref)                                       # 梯度也一样


@pytest.mark.parametrize("ignore_index", [-100, 18, 255])
def test_label_smoothing_accepts_any_ignore_index_like_torch(ignore_index):
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(3, 5, 18, generator=g)                                     # (B, T, V)
    target = torch.randint(0, 18, (3, 5), generator=g)
    target[0, 3:], target[2, 1:] = ignore_index, ignore_index                        # 忽略的位置可以不是合法类别
    ref = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=ignore_index)(logits.flatten(0, 1), target.flatten())
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, target, 0.1, ignore_index), ref)


def test_label_smoothing_floor_is_the_entropy_of_the_smoothed_target():
    V, eps = 18, 0.1
    q = torch.full((V,), eps / V)
    q[5] += 1 - eps                                                                  # 平滑后的目标分布
    at_optimum = label_smoothed_cross_entropy(q.log()[None], torch.tensor([5]), eps)
    entropy = -(q * q.log()).sum()
    torch.testing.assert_close(at_optimum, entropy)
    confident = torch.zeros(1, V)
    confident[0, 5] = 20.0                                                           # 几乎 100% 把握：反而更差
    assert label_smoothed_cross_entropy(confident, torch.tensor([5]), eps) > at_optimum + 1.0


def test_label_smoothing_is_stable_for_huge_logits_and_checks_inputs():
    logits = torch.tensor([[1000.0, -1000.0, 0.0]])
    assert torch.isfinite(label_smoothed_cross_entropy(logits, torch.tensor([1]), 0.1))
    with pytest.raises(ValueError, match="smoothing"):
        label_smoothed_cross_entropy(logits, torch.tensor([1]), 1.5)
    with pytest.raises(ValueError, match="形状"):
        label_smoothed_cross_entropy(logits, torch.tensor([1, 2]), 0.1)


# ---------------------------------------------------------------- 学习率

def test_noam_matches_the_paper_formula_and_peaks_at_warmup():
    d, w = 512, 4000
    for step in (1, 10, 3999, 4000, 4001, 100_000):
        assert noam_lr(step, d, w) == pytest.approx(d ** -0.5 * min(step ** -0.5, step * w ** -1.5))
    rates = [noam_lr(s, d, w) for s in range(1, 12_001)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == w
    assert noam_lr(4000, 512, 4000) == pytest.approx(7.0e-4, rel=2e-3)               # 论文设置的峰值约 7e-4
    assert noam_lr(10, 64, 100, factor=2.0) == pytest.approx(2 * noam_lr(10, 64, 100))
    with pytest.raises(ValueError, match="step"):
        noam_lr(0, 64, 100)


def test_warmup_linear_rises_then_falls_and_never_hits_zero():
    peak, w, total = 1e-3, 10, 100
    rates = [warmup_linear_lr(s, peak, w, total) for s in range(1, total + 1)]
    assert rates[0] == pytest.approx(peak / w) and rates[w - 1] == pytest.approx(peak)
    assert all(a < b for a, b in zip(rates[:w], rates[1:w]))                        # 预热：严格上升
    assert all(a > b for a, b in zip(rates[w:], rates[w + 1:]))                      # 之后：严格下降
    assert rates[-1] == pytest.approx(peak / (total - w)) and rates[-1] > 0
    assert warmup_linear_lr(1, peak, 0, total) == pytest.approx(peak)               # 不预热：第一步就是峰值
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_linear_lr(1, peak, total, total)


# ---------------------------------------------------------------- 训练循环

def _numeral_model(seed=0):
    torch.manual_seed(seed)
    return Transformer(TINY.replace(src_vocab_size=len(N.SOURCE_TOKENS), tgt_vocab_size=len(N.TARGET_TOKENS)))


def _batches(seed=1, n=32):
    g = torch.Generator().manual_seed(seed)
    return lambda: N.collate(N.sample_numbers(n, max_digits=4, generator=g))


def test_train_seq2seq_learns_and_records_every_step():
    model = _numeral_model()
    r = train_seq2seq(model, _batches(), steps=120, lr_at=lambda s: warmup_linear_lr(s, 3e-3, 12, 120),
                      num_threads=1, progress=False)
    assert isinstance(r, Seq2SeqResult) and r.steps == 120 and len(r.losses) == len(r.lrs) == 120
    assert r.seconds > 0 and r.steps_per_second > 0
    assert r.lrs[11] == pytest.approx(3e-3)
    first, last = sum(r.losses[:10]) / 10, sum(r.losses[-10:]) / 10
    assert last < 0.6 * first                                                        # 损失明显下降
    assert model.training                                                            # 恢复原来的模式


def test_train_seq2seq_is_deterministic_and_restores_threads():
    before = torch.get_num_threads()
    runs = []
    for _ in range(2):
        model = _numeral_model()
        r = train_seq2seq(model, _batches(), steps=15, lr_at=lambda s: 1e-3, num_threads=1, progress=False)
        runs.append((r.losses, model.state_dict()))
        assert torch.get_num_threads() == before
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])


def test_train_seq2seq_equals_a_hand_written_loop():
    steps, smoothing, threads = 8, 0.1, torch.get_num_threads()
    lr_at = lambda s: warmup_linear_lr(s, 2e-3, 3, steps)                             # noqa: E731  (一行的调度)
    ours = _numeral_model()
    r = train_seq2seq(ours, _batches(), steps=steps, lr_at=lr_at, label_smoothing=smoothing, num_threads=1,
                      progress=False)

    torch.set_num_threads(1)
    hand = _numeral_model()
    opt = torch.optim.AdamW(hand.parameters(), lr=lr_at(1), betas=(0.9, 0.98), weight_decay=0.01)
    batch_fn, losses = _batches(), []
    for step in range(1, steps + 1):
        src, tgt_in, tgt_out = batch_fn()
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        loss = label_smoothed_cross_entropy(hand(src, tgt_in), tgt_out, smoothing, ignore_index=N.PAD_ID)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(hand.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    torch.set_num_threads(threads)
    assert r.losses == pytest.approx(losses, abs=1e-5)
    # 参数逐个比较时要除开 k_proj 的偏置：它的梯度在数学上是 0（softmax 对每个键加同一个数不变），
    # 实际只剩舍入误差，AdamW 又按梯度的大小归一化，两种写法的舍入差会被放大。比模型的输出即可。
    src, tgt_in, _ = batch_fn()
    with torch.no_grad():
        torch.testing.assert_close(ours(src, tgt_in), hand(src, tgt_in), atol=1e-4, rtol=1e-4)


def test_train_seq2seq_uses_a_given_progress_bar_and_ignores_padding():
    class Bar:
        n = 0

        def update(self, k):
            self.n += k

        def set_postfix(self, **kw):
            self.postfix = kw

    bar = Bar()
    src, tgt_in, tgt_out = N.collate([5, 10086, 7])
    model = _numeral_model()
    r = train_seq2seq(model, lambda: (src, tgt_in, tgt_out), steps=60, lr_at=lambda s: 3e-3, progress=bar,
                      label_smoothing=0.0, num_threads=1)
    assert bar.n == 60 and "loss" in bar.postfix
    with torch.no_grad():
        logits = model(src, tgt_in)
    expected = nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=N.PAD_ID)
    assert math.isfinite(r.losses[-1]) and expected.item() < 0.2                      # 记住了这一批
