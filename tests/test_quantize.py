import numpy as np
import pytest
import torch
from torch import nn

from tfcourse.gpt import GPT, GPT_TINY
from tfcourse.lora import add_lora
from tfcourse.quantize import dequantize, float_size_bytes, int8_size_bytes, quantize_int8, quantize_model


def _check_round_trip(w):
    q, scale = quantize_int8(w)
    assert q.dtype == torch.int8 and q.shape == w.shape and scale.shape == (w.shape[0],)
    assert int(q.min()) >= -127 and int(q.max()) <= 127
    back = dequantize(q, scale)
    assert torch.isfinite(back).all() and torch.isfinite(scale).all() and (scale > 0).all()
    err = (back - w).abs()
    half_step = scale[:, None] / 2
    # 至多半个台阶；再留 q · scale 这次乘法本身的舍入（|q| ≤ 127，每次舍入至多 eps 倍）
    slack = 127 * scale[:, None] * torch.finfo(w.dtype).eps
    assert (err <= half_step + slack).all(), float((err / half_step).max())
    return q, scale, back, err / half_step


@pytest.mark.parametrize("seed", range(5))
def test_random_weights_error_at_most_half_a_step(seed):
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(64, 48, generator=gen) * 10 ** (seed - 2)
    q, scale, _, ratio = _check_round_trip(w)
    torch.testing.assert_close(scale, w.abs().amax(dim=1) / 127)
    assert (q.abs().amax(dim=1) == 127).all()                       # 每行最大的那个数用满 ±127
    assert ratio.max() > 0.9                                        # 界是紧的：真有元素差到接近半个台阶


def test_adversarial_weights():
    s = 0.01
    half_steps = torch.tensor([127.0, 0.5, 1.5, -2.5, 126.5, -126.5, 3.5]) * s   # 恰好落在两个台阶正中间
    rows = [
        half_steps,
        torch.zeros(7),                                             # 全 0 的行
        torch.tensor([1e4, 1e-3, -1e-3, 0.0, 2.0, -5.0, 1e-8]),     # 一个离群值：其余的数都被压成 0
        torch.full((7,), -3.0),                                     # 全相等（负）
        torch.tensor([-8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.99]),        # 最大绝对值是负数 → −127
        torch.full((7,), 1e-39),                                    # 非规格化数：scale 更小
        torch.tensor([1e-45, 0.0, -1e-45, 0.0, 0.0, 0.0, 0.0]),     # 最小的非规格化数：scale 下溢成 0
    ]
    w = torch.stack(rows)
    q, scale, back, _ = _check_round_trip(w)
    assert torch.equal(back[1], torch.zeros(7)) and scale[1] == 1.0
    assert int(q[4, 0]) == -127 and int(q[0, 0]) == 127
    assert (q[2, 1:4] == 0).all() and int(q[2, 0]) == 127          # 离群值让小的数全变成 0
    assert not back.isnan().any()
    _check_round_trip(w.double())


def test_dequantize_inverts_exactly_on_the_grid():
    gen = torch.Generator().manual_seed(0)
    q = torch.randint(-127, 128, (6, 9), generator=gen, dtype=torch.int8)
    q[:, 0] = 127
    scale = torch.rand(6, generator=gen) + 0.1
    q2, scale2 = quantize_int8(dequantize(q, scale))
    assert torch.equal(q2, q)
    torch.testing.assert_close(scale2, scale)


def test_quantize_model_and_sizes():
    torch.manual_seed(0)
    model = GPT(GPT_TINY).eval()
    original = {n: p.detach().clone() for n, p in model.state_dict().items()}
    qm = quantize_model(model)
    assert qm is not model
    assert all(torch.equal(original[n], p) for n, p in model.state_dict().items())   # 原模型不变
    linear = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    qmods = dict(qm.named_modules())
    for name in linear:
        w = dict(model.named_modules())[name].weight
        assert torch.equal(qmods[name].weight, dequantize(*quantize_int8(w)))
        assert not torch.equal(qmods[name].weight, w)
    assert torch.equal(qm.norm.weight, model.norm.weight)           # 非线性层的参数不动
    assert qm.lm_head.weight is qm.tok_emb.weight                   # 共享的权重仍共享
    # 字节数按定义逐项数一遍
    C, V, F, L = GPT_TINY.d_model, GPT_TINY.vocab_size, GPT_TINY.d_ff, GPT_TINY.n_layers
    n_params = sum(p.numel() for p in model.parameters())
    assert float_size_bytes(model) == 4 * n_params
    per_layer_w = [(C, C)] * 4 + [(F, C), (C, F)]
    lin_w = L * sum(o * i for o, i in per_layer_w) + V * C
    lin_rows = L * sum(o for o, _ in per_layer_w) + V
    assert int8_size_bytes(model) == 4 * (n_params - lin_w) + lin_w + 4 * lin_rows
    assert qm.int8_bytes == int8_size_bytes(model) and qm.float_bytes == float_size_bytes(model)
    assert 0.25 < int8_size_bytes(model) / float_size_bytes(model) < 0.5
    ids = torch.randint(0, V, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (qm(ids) - model(ids)).abs().max()
    assert 0 < diff < 0.1                                           # 量化改变了输出，但只改了一点


def test_big_linear_ratio_approaches_a_quarter():
    lin = nn.Linear(1024, 1024, bias=False)
    assert int8_size_bytes(lin) == 1024 * 1024 + 4 * 1024
    assert float_size_bytes(lin) == 4 * 1024 * 1024
    assert int8_size_bytes(nn.LayerNorm(8)) == float_size_bytes(nn.LayerNorm(8)) == 64


def test_quantize_model_with_lora_keeps_adapters_float():
    torch.manual_seed(0)
    model = add_lora(GPT(GPT_TINY), 2, 4, {"q_proj"})
    qm = quantize_model(model)
    a = model.layers[0].self_attn.q_proj
    qa = qm.layers[0].self_attn.q_proj
    assert torch.equal(qa.lora_A, a.lora_A)
    assert torch.equal(qa.base.weight, dequantize(*quantize_int8(a.base.weight)))


def test_bad_input():
    with pytest.raises(ValueError, match="2 维"):
        quantize_int8(torch.ones(3))
    with pytest.raises(ValueError, match="2 维"):
        quantize_int8(np.ones((2, 2)))
    with pytest.raises(ValueError, match="浮点"):
        quantize_int8(torch.ones(2, 2, dtype=torch.int64))
    w = torch.ones(2, 2)
    w[1, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        quantize_int8(w)
    w[1, 0] = float("inf")
    with pytest.raises(ValueError, match="无穷大"):
        quantize_int8(w)
    q, scale = quantize_int8(torch.ones(2, 3))
    with pytest.raises(ValueError, match="int8"):
        dequantize(q.float(), scale)
    with pytest.raises(ValueError, match=r"\(2,\)"):
        dequantize(q, scale[:1])
    with pytest.raises(ValueError, match="nn.Module"):
        quantize_model({"w": torch.ones(2, 2)})
    with pytest.raises(ValueError, match="nn.Module"):
        int8_size_bytes(None)
