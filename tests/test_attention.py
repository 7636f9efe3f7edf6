import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfcourse import attention

WORDS = ["我", "love", "猫"]
VECS = [[1.0, 0.0], [0.0, 1.0], [0.8, 0.8]]


def test_love_demo_weights():
    out, weights, scores = attention.simple_attention([0.0, 1.0], VECS)
    np.testing.assert_allclose(scores, [0.0, 1.0, 0.8])
    np.testing.assert_allclose(weights, [0.168, 0.457, 0.374], atol=5e-4)
    np.testing.assert_allclose(out, weights @ np.array(VECS))


def test_simple_attention_matches_torch_sdpa_without_scaling():
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(4, generator=gen, dtype=torch.float64)
    k = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    v = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    expected = F.scaled_dot_product_attention(q[None, None], k[None], v[None], scale=1.0)[0, 0]
    got, weights, _ = attention.simple_attention(q.numpy(), k.numpy(), v.numpy())
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-12)
    assert weights.sum() == pytest.approx(1.0)


def test_softmax_matches_torch_and_is_stable():
    x = np.random.default_rng(0).normal(size=(3, 4, 5)) * 10
    np.testing.assert_allclose(attention.softmax(x), torch.softmax(torch.tensor(x), -1).numpy(), atol=1e-12)
    np.testing.assert_allclose(attention.softmax(x, axis=0).sum(axis=0), 1.0)
    big = attention.softmax([1000.0, 1001.0, 999.0])
    assert np.all(np.isfinite(big))
    np.testing.assert_allclose(big, attention.softmax([1.0, 2.0, 0.0]))


def test_attention_readout_is_constant_in_length():
    values = [attention.first_token_attention_readout(L, alpha=0.6) for L in (2, 5, 20, 50, 1000)]
    np.testing.assert_allclose(values, 0.6)


def test_bad_inputs_raise_chinese_errors():
    with pytest.raises(ValueError, match=r"keys 的形状应为 \(S, 2\).*实际为 \(3, 3\)"):
        attention.simple_attention([0.0, 1.0], np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"alpha 应在 \[0, 1\]"):
        attention.first_token_attention_readout(5, alpha=1.5)
    with pytest.raises(ValueError, match="序列长度"):
        attention.first_token_attention_readout(0)
