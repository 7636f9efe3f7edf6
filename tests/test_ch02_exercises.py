"""第 2 章练习的单元测试：参考答案全部通过；常见的错误写法被抓住，并给出看得懂的提示。"""
import numpy as np
import torch
import torch.nn.functional as F

from tfcourse import attention
from tfcourse.exercises import EXERCISES, ch02, check


def test_references_pass_every_hidden_case():
    for eid, fn in (("ch02.self_attention", ch02.self_attention_reference),
                    ("ch02.attention_scores", ch02.attention_scores_reference)):
        result = check(eid, fn)
        assert result.passed and result.n_passed == len(EXERCISES[eid].cases), result.summary()


def test_hand_example_numbers():
    out, w = ch02.self_attention_reference(ch02.HAND_X, ch02.HAND_W_Q, ch02.HAND_W_K, ch02.HAND_W_V)
    scores = ch02.attention_scores_reference(ch02.HAND_X @ ch02.HAND_W_Q, ch02.HAND_X @ ch02.HAND_W_K)
    np.testing.assert_allclose(scores, [[0, 0.5, 0.5], [1.5, 0, 1], [0, 0.5, 0]])
    np.testing.assert_allclose(w[1], [0.5465, 0.1220, 0.3315], atol=5e-5)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    np.testing.assert_allclose(out, w @ ch02.HAND_X)          # W_v = I：输出就是 X 的加权平均


def test_reference_agrees_with_torch_sdpa():
    case = EXERCISES["ch02.self_attention"].cases[3]            # d_v ≠ d_k
    X, W_q, W_k, W_v = (torch.tensor(a) for a in case.args)
    out, _ = ch02.self_attention_reference(*case.args)
    expected = F.scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v)
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-12)


def test_scaling_by_d_model_is_caught_on_the_non_square_case():
    def by_d_model(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        w = attention.softmax(Q @ K.T / np.sqrt(X.shape[1]))     # 错：应除以 √d_k
        return w @ V, w

    result = check("ch02.self_attention", by_d_model)
    assert not result.passed
    assert any("d_k = 3" in m and "数值不对" in m for m in result.messages)


def test_missing_scaling_is_caught():
    def unscaled(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        w = attention.softmax((X @ W_q) @ (X @ W_k).T)
        return w @ (X @ W_v), w

    assert not check("ch02.self_attention", unscaled).passed


def test_naive_softmax_overflow_is_reported():
    def naive(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        s = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_q.shape[1])
        e = np.exp(s)
        w = e / e.sum(axis=-1, keepdims=True)
        return w @ (X @ W_v), w

    with np.errstate(over="ignore", invalid="ignore"):
        result = check("ch02.self_attention", naive)
    assert not result.passed
    assert any("很大的输入" in m and "NaN" in m for m in result.messages)


def test_softmax_over_the_wrong_axis_is_caught():
    def wrong_axis(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=float)
        s = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_q.shape[1])
        w = attention.softmax(s, axis=0)                      # 错：每一列和为 1
        return w @ (X @ W_v), w

    assert not check("ch02.self_attention", wrong_axis).passed


def test_returning_only_the_output_is_reported():
    result = check("ch02.self_attention", lambda *a: ch02.self_attention_reference(*a)[0])
    assert not result.passed
    assert any("应返回 2 个结果" in m for m in result.messages)


def test_scores_transposed_or_scaled_by_the_wrong_size_are_caught():
    transposed = check("ch02.attention_scores", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[1]))
    assert not transposed.passed
    assert any("T ≠ S" in m and "形状不对" in m for m in transposed.messages)

    by_length = check("ch02.attention_scores", lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]))
    assert not by_length.passed

    not_sqrt = check("ch02.attention_scores", lambda Q, K: Q @ K.T / Q.shape[1])
    assert not not_sqrt.passed
    assert any("d_k = 16" in m for m in not_sqrt.messages)


def test_inputs_are_float64_numpy_arrays_as_the_statement_says():
    for eid in ("ch02.self_attention", "ch02.attention_scores"):
        for case in EXERCISES[eid].cases:
            assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in case.args), case.description

def test_a_correct_float32_solution_passes():
    # 打分上千时 float32 的相对舍入误差约 1e-4：检查器量出的容差要放得下它，错误的解法照样通不过（见上面的测试）
    def float32(X, W_q, W_k, W_v):
        X, W_q, W_k, W_v = (torch.tensor(a, dtype=torch.float32) for a in (X, W_q, W_k, W_v))
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        w = torch.softmax(Q @ K.T / Q.shape[-1] ** 0.5, dim=-1)
        return (w @ V).numpy(), w.numpy()

    result = check("ch02.self_attention", float32)
    assert result.passed, result.summary()
    scores32 = check("ch02.attention_scores",
                     lambda Q, K: (torch.tensor(Q, dtype=torch.float32) @ torch.tensor(K, dtype=torch.float32).T
                                   / Q.shape[-1] ** 0.5).numpy())
    assert scores32.passed, scores32.summary()
