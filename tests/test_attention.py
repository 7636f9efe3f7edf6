import zlib

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


# ---------------------------------------------------------------------------
# 第 2–4 章：缩放点积注意力、掩码、多头注意力（对照 torch 的参考实现）
# ---------------------------------------------------------------------------
from torch import nn  # noqa: E402

pytestmark = pytest.mark.numerics   # 与参考实现的数值对照：make numerics 在另一条 CPU 路径上再跑

SHAPES = [((3, 5, 4), (3, 7, 4)), ((2, 3, 6, 8), (2, 3, 6, 8)), ((1, 1, 4), (1, 9, 4)), ((2, 2, 2, 3, 5), (2, 2, 2, 4, 5))]


def _rand(shape, gen, dtype):
    return torch.randn(*shape, generator=gen, dtype=dtype)


def _torch_weights(q, k, mask=None):
    """参考权重：torch 的 F.sdpa 不返回权重，用"值为单位阵"的技巧让它把权重当输出吐出来。"""
    S = k.shape[-2]
    eye = torch.eye(S, dtype=q.dtype).expand(*k.shape[:-2], S, S)
    return F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)


@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("kind", ["none", "causal", "padding", "random"])
@pytest.mark.parametrize("shapes", SHAPES)
def test_sdpa_matches_torch(shapes, kind, dtype, atol):
    gen = torch.Generator().manual_seed(zlib.crc32(repr((shapes, kind)).encode()))
    q_shape, k_shape = shapes
    q, k = _rand(q_shape, gen, dtype), _rand(k_shape, gen, dtype)
    v = _rand(k_shape[:-1] + (3,), gen, dtype)
    T, S = q_shape[-2], k_shape[-2]
    mask = None
    if kind == "causal":
        mask = torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)   # 每行至少能看一个键
    elif kind == "padding":
        lengths = torch.randint(1, S + 1, (k_shape[0],), generator=gen)
        mask = attention.padding_mask(lengths, max_len=S)                # (B, 1, S)
        mask = mask.view(k_shape[0], *([1] * (len(q_shape) - 2)), S)      # 广播到 (B, …, T, S)
    elif kind == "random":
        mask = torch.rand(T, S, generator=gen) < 0.6
        mask[:, 0] = True
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=atol, rtol=0)
    torch.testing.assert_close(weights, _torch_weights(q, k, mask), atol=atol, rtol=0)
    assert weights.shape == q.shape[:-1] + (S,)
    allowed = torch.ones_like(weights, dtype=torch.bool) if mask is None else mask.expand_as(weights)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=dtype))   # 每行和为 1
    assert torch.all(weights[~allowed] == 0)                                                   # 被屏蔽的键权重为 0


def test_fully_masked_row_gives_zeros_not_nan_like_torch():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (_rand((2, 3, 4), gen, torch.float64) for _ in range(3))
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, False]])
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any() and not torch.isnan(weights).any()
    assert torch.all(weights[:, 1] == 0) and torch.all(out[:, 1] == 0)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    _, w_np = attention.scaled_dot_product_attention_numpy(q[0].numpy(), k[0].numpy(), v[0].numpy(), mask.numpy())
    np.testing.assert_allclose(w_np, weights[0].numpy(), atol=1e-12)


def test_nan_in_the_input_is_not_hidden_by_a_mask():
    q = torch.ones(1, 2, 4)
    q[0, 1, 0] = float("nan")
    mask = torch.ones(2, 2, dtype=torch.bool)
    out, weights = attention.scaled_dot_product_attention(q, q, q, mask)
    ref = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert torch.isnan(weights[0, 1]).all() and torch.isnan(out[0, 1]).all()     # 坏输入照样报出来
    assert torch.equal(torch.isnan(out), torch.isnan(ref))


def test_fully_masked_row_has_finite_gradients():
    x = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, False]])
    out, _ = attention.scaled_dot_product_attention(x, x, x, mask)
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_numpy_twin_matches_torch():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = rng.random((3, 5)) < 0.7
    mask[:, 0] = True
    for m in (None, mask):
        out, w = attention.scaled_dot_product_attention_numpy(q, k, v, m)
        t_out, t_w = attention.scaled_dot_product_attention(
            *(torch.tensor(a) for a in (q, k, v)), None if m is None else torch.tensor(m))
        np.testing.assert_allclose(out, t_out.numpy(), atol=1e-12)
        np.testing.assert_allclose(w, t_w.numpy(), atol=1e-12)


def test_masks_follow_true_means_may_attend():
    m = attention.causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert m[2, :3].all() and not m[2, 3] and m.sum() == 10
    by_len = attention.padding_mask(torch.tensor([3, 1]), max_len=4)
    by_ids = attention.padding_mask(torch.tensor([[5, 6, 7, 0], [9, 0, 0, 0]]), pad_id=0)
    expected = torch.tensor([[[True, True, True, False]], [[True, False, False, False]]])
    assert torch.equal(by_len, expected) and torch.equal(by_ids, expected)
    assert attention.padding_mask(torch.tensor([2, 4])).shape == (2, 1, 4)


def test_causal_output_ignores_future_tokens():
    gen = torch.Generator().manual_seed(5)
    x = _rand((1, 6, 8), gen, torch.float64)
    out1, _ = attention.scaled_dot_product_attention(x, x, x, attention.causal_mask(6))
    x2 = x.clone()
    x2[0, 4] += 10.0                                           # 改第 4 个位置
    out2, _ = attention.scaled_dot_product_attention(x2, x2, x2, attention.causal_mask(6))
    torch.testing.assert_close(out1[0, :4], out2[0, :4], atol=0, rtol=0)
    assert not torch.allclose(out1[0, 4:], out2[0, 4:])


def test_sdpa_bad_inputs_raise_chinese_errors():
    q, k = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4)
    with pytest.raises(ValueError, match=r"最后一维 D.*\(2, 3, 4\).*\(2, 5, 3\)"):
        attention.scaled_dot_product_attention(q, torch.zeros(2, 5, 3), k)
    with pytest.raises(ValueError, match=r"长度 S.*\(2, 5, 4\).*\(2, 6, 4\)"):
        attention.scaled_dot_product_attention(q, k, torch.zeros(2, 6, 4))
    with pytest.raises(ValueError, match=r"dtype 应为 torch.bool.*torch.float32"):
        attention.scaled_dot_product_attention(q, k, k, torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"形状 \(3, 4\) 无法广播到.*\(2, 3, 5\)"):
        attention.scaled_dot_product_attention(q, k, k, torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="至少 2 维"):
        attention.scaled_dot_product_attention(torch.zeros(4), k, k)
    with pytest.raises(ValueError, match="pad_id"):
        attention.padding_mask(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="不能超过 max_len=2"):
        attention.padding_mask(torch.tensor([3]), max_len=2)


def _pair(d_model=16, n_heads=4, bias=True, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).eval()
    with torch.no_grad():                                      # 默认偏置是 0：换成随机数，抄错了才看得出来
        for p in ref.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours = attention.MultiHeadAttention(d_model, n_heads, bias=bias).eval().load_torch_weights(ref)
    return ours, ref


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "batch"])
@pytest.mark.parametrize("cross", [False, True])
def test_mha_matches_torch_multihead_attention(cross, mask_kind, bias):
    ours, ref = _pair(bias=bias)
    gen = torch.Generator().manual_seed(7)
    B, T, S, C = 3, 5, (7 if cross else 5), 16
    x = torch.randn(B, T, C, generator=gen)
    mem = torch.randn(B, S, C, generator=gen) if cross else x
    mask = None
    torch_kw = {}
    if mask_kind == "causal":
        mask = torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)     # (T, S)
        torch_kw["attn_mask"] = ~mask                                      # torch 的布尔 attn_mask：True = 不许看
    elif mask_kind == "padding":
        lengths = torch.tensor([S, 2, 4])
        mask = attention.padding_mask(lengths, max_len=S)                  # (B, 1, S)
        torch_kw["key_padding_mask"] = ~mask[:, 0]
    elif mask_kind == "batch":
        mask = torch.rand(B, T, S, generator=gen) < 0.6                    # (B, T, S)
        mask[..., 0] = True
        torch_kw["attn_mask"] = (~mask).repeat_interleave(4, dim=0)        # torch 要 (B·H, T, S)
    out, weights = ours(x, mem, mem, mask=mask)
    ref_out, ref_avg = ref(x, mem, mem, need_weights=True, **torch_kw)
    _, ref_heads = ref(x, mem, mem, need_weights=True, average_attn_weights=False, **torch_kw)
    assert out.shape == (B, T, C) and weights.shape == (B, 4, T, S)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, ref_heads, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(weights.mean(1), ref_avg, atol=1e-6, rtol=1e-5)


def test_mha_mask_shapes_agree():
    ours, _ = _pair()
    x = torch.randn(2, 4, 16)
    m = attention.causal_mask(4)
    results = [ours(x, mask=mm)[0] for mm in (m, m.expand(2, 4, 4), m.expand(2, 1, 4, 4))]
    for r in results[1:]:
        torch.testing.assert_close(r, results[0], atol=0, rtol=0)


def test_self_attention_is_permutation_equivariant_without_positions():
    from tfcourse.positional import sinusoidal_positional_encoding
    ours, _ = _pair()
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(1, 6, 16, generator=gen)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    out, _ = ours(x)
    out_perm, _ = ours(x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=1e-5)           # 打乱输入 = 打乱输出
    pe = sinusoidal_positional_encoding(6, 16)
    out_pe, _ = ours(x + pe)
    out_pe_perm, _ = ours(x[:, perm] + pe)
    assert (out_pe_perm - out_pe[:, perm]).abs().max() > 1e-2                           # 加上位置编码就不再等变


def test_mha_bad_inputs_raise_chinese_errors():
    with pytest.raises(ValueError, match="d_model=10，n_heads=4"):
        attention.MultiHeadAttention(10, 4)
    mha = attention.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query 的形状应为 \(B, 长度, 8\).*\(4, 8\)"):
        mha(torch.zeros(4, 8))
    with pytest.raises(ValueError, match="key 与 value 的长度须相同"):
        mha(torch.zeros(1, 3, 8), torch.zeros(1, 4, 8), torch.zeros(1, 5, 8))
    with pytest.raises(ValueError, match=r"形状 \(3, 4\) 无法广播"):
        mha(torch.zeros(1, 3, 8), mask=torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="torch.bool"):
        mha(torch.zeros(1, 3, 8), mask=torch.ones(3, 3))
    with pytest.raises(ValueError, match="embed_dim=16"):
        mha.load_torch_weights(nn.MultiheadAttention(16, 2))


def test_scaling_statistics_show_var_d_and_vanishing_gradient():
    r = attention.scaling_statistics(d_values=(4, 64, 512), n_keys=8, n_samples=500)
    np.testing.assert_allclose(r["var_dot"] / r["d_values"], 1.0, atol=0.15)         # Var(q·k) ≈ d_k
    unscaled, scaled = r["grad_norm"]
    assert unscaled[-1] < 0.4 * scaled[-1]                                            # 不缩放：梯度变小
    assert np.ptp(scaled) < 0.05                                                      # 缩放后与 d_k 无关
    assert r["max_weight"][0, -1] > 0.9 > r["max_weight"][1, -1]
    # 传到 q 的梯度：不缩放时平均值不小，但大多数查询几乎收不到梯度（中位数塌下去）
    assert r["q_grad_mean"][0, -1] > r["q_grad_mean"][1, -1]
    assert r["q_grad_median"][0, -1] < 0.1 * r["q_grad_median"][1, -1]
    assert r["q_grad_small"][0, -1] > 0.3 and r["q_grad_small"][1, -1] == 0.0


def test_scaling_statistics_q_gradient_matches_autograd():
    q, k, g = attention.scaling_samples(d_max=32, n_keys=8, n_samples=5, seed=3)
    r = attention.scaling_statistics(d_values=(32,), n_keys=8, n_samples=5, seed=3)
    for i, scale in enumerate((1.0, 32 ** -0.5)):
        qq = q.clone().requires_grad_()
        p = ((qq @ k.transpose(1, 2))[:, 0] * scale).softmax(-1)                   # (n, S)
        (p * g).sum().backward()
        norms = qq.grad[:, 0].norm(dim=-1)
        assert r["q_grad_median"][i, 0] == pytest.approx(norms.median().item(), rel=1e-10)
        assert r["q_grad_mean"][i, 0] == pytest.approx(norms.mean().item(), rel=1e-10)
    np.testing.assert_allclose(r["example"].sum(-1), 1.0)
