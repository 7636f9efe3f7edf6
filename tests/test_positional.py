import math

import pytest
import torch

from tfcourse import positional

pytestmark = pytest.mark.numerics   # 与参考实现的数值对照：make numerics 在另一条 CPU 路径上再跑


def test_formula_by_hand():
    pe = positional.sinusoidal_positional_encoding(50, 8)
    assert pe.shape == (50, 8) and pe.dtype == torch.float32
    for p in (0, 1, 7, 49):
        for i in range(4):
            angle = p / 10000 ** (2 * i / 8)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


@pytest.mark.parametrize("k", [1, 5, 30, -3])
def test_shift_is_a_linear_map_independent_of_position(k):
    pe = positional.sinusoidal_positional_encoding(80, 16).double()
    R = positional.relative_rotation(k, 16)
    src = pe[max(0, -k): 80 - max(0, k)]
    dst = pe[max(0, k): 80 + min(0, k)]
    torch.testing.assert_close(src @ R.T, dst, atol=1e-6, rtol=0)
    torch.testing.assert_close(R @ R.T, torch.eye(16, dtype=torch.float64))          # 旋转：正交


def test_dot_product_depends_only_on_offset():
    pe = positional.sinusoidal_positional_encoding(64, 32).double()
    dots = pe @ pe.T
    for k in (0, 3, 10):
        diag = torch.diagonal(dots, k)
        assert diag.max() - diag.min() < 1e-5
    assert dots[0, 0] == pytest.approx(16.0) and dots[0, 1] > dots[0, 10]


def test_learned_positions_add_and_refuse_too_long():
    torch.manual_seed(0)
    emb = positional.LearnedPositionalEmbedding(5, 4)
    x = torch.zeros(2, 3, 4)
    torch.testing.assert_close(emb(x), emb.weight[:3].expand(2, 3, 4))
    with pytest.raises(ValueError, match="超过了可学习位置向量的上限 max_len=5"):
        emb(torch.zeros(1, 6, 4))


def test_bad_inputs():
    with pytest.raises(ValueError, match="应为偶数.*7"):
        positional.sinusoidal_positional_encoding(10, 7)
    with pytest.raises(ValueError, match="max_len 应为正整数"):
        positional.sinusoidal_positional_encoding(0, 8)


def test_learned_positions_init_scale_and_reader_uses_them():
    from tfcourse.readers import AttentionReader
    torch.manual_seed(0)
    assert positional.LearnedPositionalEmbedding(500, 64).weight.std().item() == pytest.approx(0.02, rel=0.05)
    reader = AttentionReader(vocab_size=8, n_classes=8, max_len=20, d_model=32)
    assert isinstance(reader.pos, positional.LearnedPositionalEmbedding)                # 一个概念只有一个家
    assert reader.pos.weight.std().item() == pytest.approx(1.0, rel=0.1)               # 与 nn.Embedding 相同的初始化
