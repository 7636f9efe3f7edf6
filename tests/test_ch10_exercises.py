"""第 10 章练习的检查：参考实现通过；常见的错误写法（标签平滑分错了份、填充算进平均、先 softmax 再 log；
解码不在 <eos> 停、取错位置、把 <bos> 也返回）被抓住，说明指向问题所在。"""
import pytest
import torch

from tfcourse.decode import greedy_decode
from tfcourse.exercises import EXERCISES, check

BOS, EOS = 1, 2


pytestmark = pytest.mark.usefixtures("one_thread")     # 见 tests/conftest.py


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch10.label_smoothed_ce", "ch10.greedy_one"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_torch_cross_entropy_loss_is_a_correct_answer():
    def with_torch(logits, target, smoothing, ignore_index):
        loss = torch.nn.CrossEntropyLoss(label_smoothing=smoothing, ignore_index=ignore_index)
        return loss(logits.flatten(0, -2), target.flatten())

    assert check("ch10.label_smoothed_ce", with_torch).passed


def _smoothed(logits, target, smoothing, ignore_index, *, spread_over_others=False, keep_pad=False,
              naive_log=False):
    logp = logits.softmax(-1).log() if naive_log else logits.log_softmax(-1)
    V = logits.shape[-1]
    one_hot = torch.nn.functional.one_hot(target.clamp(min=0), V).to(logits.dtype)
    if spread_over_others:                                   # ε 只分给错误答案：每个 ε/(V−1)
        q = one_hot * (1 - smoothing) + (1 - one_hot) * smoothing / (V - 1)
    else:
        q = one_hot * (1 - smoothing) + smoothing / V
    loss = -(q * logp).sum(-1)
    if not keep_pad:
        loss = loss[target != ignore_index]
    return loss.mean()


def test_smoothing_spread_over_the_wrong_classes_only_is_caught():
    result = check("ch10.label_smoothed_ce",
                   lambda *a: _smoothed(*a, spread_over_others=True))
    assert not result.passed
    assert result.n_passed == 2                                   # 只有 ε = 0 的两个用例碰巧对
    assert all("数值不对" in m for m in result.messages)


def test_averaging_over_padding_is_caught():
    result = check("ch10.label_smoothed_ce", lambda *a: _smoothed(*a, keep_pad=True))
    assert not result.passed
    assert any("填充" in m for m in result.messages)


def test_always_ignoring_class_zero_instead_of_ignore_index_is_caught():
    result = check("ch10.label_smoothed_ce", lambda logits, target, eps, _ignore: _smoothed(logits, target, eps, 0))
    assert not result.passed
    assert any("没有要忽略的位置" in m and "数值不对" in m for m in result.messages)


def test_softmax_then_log_overflows_on_huge_logits():
    result = check("ch10.label_smoothed_ce", lambda *a: _smoothed(*a, naive_log=True))
    assert not result.passed and result.n_passed == result.n_cases - 1
    assert any("很大的 logits" in m and "NaN 或无穷大" in m for m in result.messages)


def _greedy(model, src, max_len, *, stop_at_eos=True, position=-1, keep_bos=False):
    memory, memory_mask = model.encode(src), model.source_mask(src)
    ys = torch.tensor([[BOS]])
    for _ in range(max_len):
        nxt = model.decode(ys, memory, memory_mask)[:, position].argmax(-1)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        if stop_at_eos and nxt.item() == EOS:
            break
    return ys[0] if keep_bos else ys[0, 1:]


def test_hand_written_greedy_passes_and_equals_the_package():
    assert check("ch10.greedy_one", _greedy).passed
    for case in EXERCISES["ch10.greedy_one"].cases:
        model, src, max_len = case.args
        assert torch.equal(_greedy(model, src, max_len), greedy_decode(model, src, BOS, EOS, max_len)[0])


def test_not_stopping_at_eos_is_caught_as_a_shape_problem():
    result = check("ch10.greedy_one", lambda *a: _greedy(*a, stop_at_eos=False))
    assert not result.passed
    eos_cases = [m for m in result.messages if "<eos>" in m and "形状不对" in m]
    assert len(eos_cases) == 2                                    # "第 4 步"与"第一步"生成 <eos> 的两个用例


def test_reading_the_first_position_instead_of_the_last_is_caught():
    result = check("ch10.greedy_one", lambda *a: _greedy(*a, position=0))
    assert not result.passed
    assert any("数值不对" in m for m in result.messages)


def test_returning_bos_is_caught():
    result = check("ch10.greedy_one", lambda *a: _greedy(*a, keep_bos=True))
    assert not result.passed and result.n_passed == 0
