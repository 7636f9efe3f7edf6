import numpy as np
import pytest
import torch

from tfcourse import rnn


def test_residual_table_matches_chapter_one():
    got = [rnn.final_hidden_state(L, 0.9, 0.5) for L in (5, 10, 20, 50)]
    np.testing.assert_allclose(got, [0.2610, 0.1452, 0.0493, 0.0021], atol=5e-5)


def test_tanh_derivative_values():
    got = rnn.tanh_derivative([0.0, 0.5, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(got, [1.0, 0.7864, 0.4200, 0.0707, 0.0099], atol=5e-5)
    z = np.linspace(-4, 4, 81)
    t = torch.tensor(z, requires_grad=True)
    torch.tanh(t).sum().backward()
    np.testing.assert_allclose(rnn.tanh_derivative(z), t.grad.numpy(), atol=1e-12)


def test_scalar_rnn_equals_explicit_loop():
    seq = [0.3, -1.0, 2.0, 0.0, 0.5]
    h, expected = 0.0, []
    for x in seq:
        h = np.tanh(0.7 * h + 1.3 * x)
        expected.append(h)
    np.testing.assert_allclose(rnn.rnn_forward(seq, 0.7, 1.3), expected, atol=1e-15)


def test_vector_rnn_matches_torch_nn_rnn():
    gen = torch.Generator().manual_seed(0)
    T, I, H = 7, 3, 5
    ref = torch.nn.RNN(I, H, bias=False, nonlinearity="tanh", batch_first=True).double()
    x = torch.randn(1, T, I, generator=gen, dtype=torch.float64)
    h0 = torch.randn(H, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        expected, _ = ref(x, h0[None, None])
    got = rnn.rnn_forward(
        x[0].numpy(), ref.weight_hh_l0.detach().numpy(), ref.weight_ih_l0.detach().numpy(), h0=h0.numpy()
    )
    np.testing.assert_allclose(got, expected[0].numpy(), atol=1e-12)


def test_memory_curves_agree_with_final_hidden_state():
    w_hh = [0.0, 0.5, 0.9, 1.2]
    w_xh = [0.25, 0.5, 2.0]
    grid = rnn.memory_curves(w_hh, w_xh, 30)
    assert grid.shape == (4, 3, 30)
    for i, a in enumerate(w_hh):
        for j, b in enumerate(w_xh):
            for L in (1, 7, 30):
                assert grid[i, j, L - 1] == pytest.approx(rnn.final_hidden_state(L, a, b), abs=1e-15)


def test_w_hh_above_one_sticks_at_a_fixed_point_that_forgets_the_input_size():
    # W_hh > 1：状态不归零，而是停在 tanh 的不动点上，几乎与开头输入的大小无关
    small = rnn.final_hidden_state(200, w_hh=1.2, w_xh=0.25)
    large = rnn.final_hidden_state(200, w_hh=1.2, w_xh=2.0)
    assert small > 0.5
    assert small == pytest.approx(large, abs=1e-9)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "20", True, None])
def test_bad_length_raises_chinese_value_error(bad):
    with pytest.raises(ValueError, match="序列长度 length 应为正整数"):
        rnn.final_hidden_state(bad)


def test_wrong_shaped_sequence_names_expected_and_given():
    with pytest.raises(ValueError, match=r"应为 1 维数组，实际形状为 \(2, 3\)"):
        rnn.rnn_forward(np.zeros((2, 3)), 0.9, 0.5)
    with pytest.raises(ValueError, match=r"inputs 的形状应为 \(T, 3\).*实际为 \(4, 2\)"):
        rnn.rnn_forward(np.zeros((4, 2)), np.eye(5), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="W_hh 应为方阵"):
        rnn.rnn_forward(np.zeros((4, 3)), np.zeros((5, 4)), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="至少要有 1 个时间步"):
        rnn.rnn_forward([], 0.9, 0.5)
    with pytest.raises(ValueError, match="NaN"):
        rnn.rnn_forward([1.0, float("nan")], 0.9, 0.5)
