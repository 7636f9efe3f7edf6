import numpy as np
import pytest

from tfcourse import attention, rnn
from tfcourse.exercises import EXERCISES, check


def test_reference_implementations_pass():
    assert check("ch01.softmax", attention.softmax).passed
    result = check("ch01.rnn_final_state", lambda s, a, b: rnn.rnn_forward(s, a, b)[-1])
    assert result.passed and result.n_passed == result.n_cases == len(EXERCISES["ch01.rnn_final_state"].cases)


def test_naive_softmax_is_caught_with_overflow_hint():
    def naive(x):
        e = np.exp(x)
        return e / e.sum(-1, keepdims=True)

    with np.errstate(over="ignore", invalid="ignore"):
        result = check("ch01.softmax", naive)
    assert not result.passed
    assert any("溢出" in m for m in result.messages)


def test_softmax_over_the_wrong_axis_is_caught():
    def wrong_axis(x):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)

    result = check("ch01.softmax", wrong_axis)
    assert not result.passed
    assert any("二维输入" in m and "数值不对" in m for m in result.messages)


def test_stub_missing_return_and_exception_get_readable_messages():
    def stub(seq, w_hh, w_xh):
        raise NotImplementedError

    def forgot_return(seq, w_hh, w_xh):
        np.tanh(w_hh)

    def crashes(seq, w_hh, w_xh):
        return seq[100]

    assert "还没有实现" in check("ch01.rnn_final_state", stub).summary()
    assert "忘了写 return" in check("ch01.rnn_final_state", forgot_return).summary()
    assert "IndexError" in check("ch01.rnn_final_state", crashes).summary()


def test_elementwise_instead_of_matrix_rnn_state_is_caught():
    def uses_last_input_only(seq, w_hh, w_xh):
        return np.tanh(w_xh * seq[-1])

    assert not check("ch01.rnn_final_state", uses_last_input_only).passed


def test_wrong_shape_is_reported():
    result = check("ch01.softmax", lambda x: np.ravel(attention.softmax(x))[:2])
    assert any("形状不对" in m for m in result.messages)


def test_unknown_exercise_and_non_callable():
    with pytest.raises(ValueError, match="没有编号为"):
        check("ch99.nothing", print)
    with pytest.raises(ValueError, match="应是你写的函数"):
        check("ch01.softmax", 42)


def test_html_repr_escapes_and_marks_status():
    ok = check("ch01.softmax", attention.softmax)
    assert "✅" in ok._repr_html_() and "#1a7f37" in ok._repr_html_()


def test_in_place_solution_cannot_corrupt_the_hidden_cases():
    def in_place_softmax(x):
        x -= x.max(axis=-1, keepdims=True)          # 原地修改输入：常见写法
        np.exp(x, out=x)
        x /= x.sum(axis=-1, keepdims=True)
        return x

    def naive(x):
        e = np.exp(x)
        return e / e.sum(-1, keepdims=True)

    assert check("ch01.softmax", in_place_softmax).passed
    big = EXERCISES["ch01.softmax"].cases[2].args[0]
    np.testing.assert_array_equal(big, [1000.0, 1001.0, 999.0])   # "很大的打分"用例原样保留
    with np.errstate(over="ignore", invalid="ignore"):
        assert not check("ch01.softmax", naive).passed           # 所以朴素写法照样被抓住


def test_summary_names_the_exercise():
    assert "实现数值稳定的 softmax" in check("ch01.softmax", attention.softmax).summary()


def test_tuple_and_torch_results_are_compared_element_by_element():
    import torch

    from tfcourse.exercises import _compare

    exp = (torch.ones(2, requires_grad=True) * 2, np.zeros(3))
    assert _compare(exp, (torch.full((2,), 2.0), np.zeros(3)), 1e-6) is None
    assert "第 2 个返回值：形状不对" in _compare(exp, (torch.full((2,), 2.0), np.zeros(4)), 1e-6)
    assert "应返回 2 个结果" in _compare(exp, torch.zeros(2), 1e-6)


def test_boolean_answers_must_be_boolean():
    import torch

    from tfcourse.exercises import _compare

    mask = torch.ones(2, 2, dtype=torch.bool).tril()
    assert _compare(mask, mask.clone(), 0) is None
    assert "布尔" in _compare(mask, mask.float(), 0)


def test_large_results_computed_in_float32_pass_but_wrong_ones_fail():
    from tfcourse.exercises import _compare

    expected = np.array([175.123456789, 0.5])
    assert _compare(expected, expected.astype(np.float32), atol=1e-6, rtol=1e-5) is None
    assert "数值不对" in _compare(expected, expected * 1.001, atol=1e-6, rtol=1e-5)
    assert "数值不对" in _compare(expected, expected + [0, 1e-5], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_reference_passes_public_and_hidden_cases(exercise_id):
    """每道练习的参考实现都通过公开用例和几组隐藏用例（各章的测试只需写"常见错误被抓住"）。"""
    ex = EXERCISES[exercise_id]
    assert check(exercise_id, ex.reference).passed
    for seed in range(3):
        result = check(exercise_id, ex.reference, cases=ex.generate(np.random.default_rng(seed)))
        assert result.passed, result.summary()
