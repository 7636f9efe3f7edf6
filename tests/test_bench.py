"""计时小工具：三种 RNN 写法算的是同一个东西；计时只断言与机器无关的性质。"""
import numpy as np
import pytest
import torch

from tfcourse import bench, rnn


def _weights(d, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(d, d, generator=gen) / d ** 0.5 for _ in range(2)]


def test_three_rnn_variants_compute_the_same_final_state_as_the_numpy_rnn():
    w_hh, w_xh = _weights(6)
    x = torch.randn(3, 9, 6, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        got = {name: fn(x) for name, fn in bench.rnn_variants(w_hh, w_xh).items()}
    assert set(got) == {"loop", "loop_batched", "nn_rnn"}
    for name, h in got.items():
        assert h.shape == (3, 6), name
        torch.testing.assert_close(h, got["loop"], rtol=1e-5, atol=1e-6)
    # 与第 1 章的 numpy 版 RNN 一致（它的记号是 W·h，即这里权重的转置）
    for b in range(3):
        ref = rnn.rnn_forward(x[b].double().numpy(), w_hh.T.double().numpy(), w_xh.T.double().numpy())[-1]
        np.testing.assert_allclose(got["loop"][b].numpy(), ref, atol=1e-5)


def test_nn_rnn_variant_uses_the_given_weights_not_its_own_initialisation():
    w_hh, w_xh = _weights(4)
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        a = bench.rnn_variants(w_hh, w_xh)["nn_rnn"](x)
        b = bench.rnn_variants(w_hh, 2 * w_xh)["nn_rnn"](x)
    assert not torch.allclose(a, b)


def test_breakdown_rows_have_the_work_counts_and_positive_times():
    rows = bench.rnn_timing_breakdown([4, 32], batch=2, d=8, repeats=2)
    assert [r["T"] for r in rows] == [4, 32]
    for r in rows:
        for key in ("loop_ms", "loop_batched_ms", "nn_rnn_ms", "no_wait_ms", "attention_ms"):
            assert r[key] > 0, key
        assert r["rnn_sequential_steps"] == r["T"] and r["attention_sequential_steps"] == 1
        assert r["rnn_macs"] == 2 * 2 * r["T"] * 8 * 8
        assert r["attention_macs"] / r["rnn_macs"] == r["T"] / 8


def test_serial_time_grows_with_the_number_of_steps():
    # 步数多 128 倍，用时至少多 4 倍：留足余量。单线程量，免得别的程序抢核时
    # 线程之间的同步等待（一次就是几十毫秒）盖过了要量的东西。
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = bench.rnn_timing_breakdown([8, 1024], batch=4, d=16, repeats=5)
    finally:
        torch.set_num_threads(threads)
    assert rows[1]["nn_rnn_ms"] > 4 * rows[0]["nn_rnn_ms"]
    assert rows[1]["loop_ms"] > 4 * rows[0]["loop_ms"]


def test_median_time_runs_warmup_plus_repeats():
    calls = []
    assert bench.median_time(lambda: calls.append(1), repeats=4, warmup=1) >= 0
    assert len(calls) == 5


def test_old_rnn_vs_attention_timing_keeps_its_columns():
    (row,) = bench.rnn_vs_attention_timing([8], batch=2, d=4, repeats=1)
    assert set(row) == {"T", "rnn_ms", "attention_ms", "rnn_sequential_steps",
                        "attention_sequential_steps", "rnn_macs", "attention_macs"}
    assert row["rnn_macs"] == 2 * 2 * 8 * 4 * 4


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_bad_lengths_raise_chinese_value_error(bad):
    with pytest.raises(ValueError, match="序列长度"):
        bench.rnn_timing_breakdown([bad], batch=1, d=2, repeats=1)


# ---------- 第 16 章：注意力的五种写法、内存峰值、KV 缓存 ----------

def _qkv(shape=(2, 3, 9, 5), S=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    B, H, T, D = shape
    S = T if S is None else S
    return torch.randn(B, H, T, D, generator=g), torch.randn(B, H, S, D, generator=g), \
        torch.randn(B, H, S, D + 1, generator=g)


@pytest.mark.parametrize("masked", [False, True])
def test_five_attention_implementations_agree(masked):
    from tfcourse.attention import scaled_dot_product_attention
    q, k, v = _qkv(S=11)                                   # T ≠ S，S 不是块大小的倍数
    mask = None
    if masked:
        mask = torch.rand(2, 1, 9, 11, generator=torch.Generator().manual_seed(3)) > 0.4
        mask[0, 0, 2] = False                              # 一整行都不许看：输出 0
    ref = scaled_dot_product_attention(q, k, v, mask)[0]
    impls = bench.attention_implementations(block_size=4)
    assert list(impls) == ["naive", "batched", "package", "torch", "tiled"]
    for name, fn in impls.items():
        out = fn(q, k, v, mask)
        assert out.shape == (2, 3, 9, 6), name
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5, msg=name)
        if masked:
            assert torch.isfinite(out).all(), name
            if name != "torch":                            # 课程包的约定：整行屏蔽 → 0
                assert out[0, :, 2].abs().max() == 0, name


def test_peak_tensor_bytes_counts_live_tensors_not_inputs():
    x = torch.ones(1000)                                   # 输入：不算

    def two_alive():
        a = x * 2                                          # 4000 字节
        b = a + 1                                          # 又 4000，a 还活着
        return b.sum()

    def one_at_a_time():
        for _ in range(5):
            (x * 2).sum()                                  # 每次用完就释放
        return None

    assert bench.peak_tensor_bytes(two_alive)[1] >= 8000
    assert 4000 <= bench.peak_tensor_bytes(one_at_a_time)[1] < 8000
    view_bytes = bench.peak_tensor_bytes(lambda: x.view(10, 100).t())[1]
    assert view_bytes <= x.nbytes                           # 视图最多数一次


def test_batched_memory_grows_quadratically_and_tiled_linearly():
    def peak(fn, T):
        q, k, v = _qkv((1, 2, T, 8))
        return bench.peak_tensor_bytes(fn, q, k, v)[1]

    impls = bench.attention_implementations(block_size=16)
    b1, b2 = peak(impls["batched"], 128), peak(impls["batched"], 256)
    t1, t2 = peak(impls["tiled"], 128), peak(impls["tiled"], 256)
    assert 3.5 < b2 / b1 < 4.5 and 1.6 < t2 / t1 < 2.4
    assert b1 >= 2 * 2 * 128 * 128 * 4                     # 打分表与权重表两张 (H, T, T)


def test_benchmark_stops_only_the_limited_implementation():
    rows = bench.attention_benchmark([8, 16], limit_s=0.0, repeats=1)   # naive 第一次就"太慢"
    seen = {(r["impl"], r["T"]) for r in rows}
    assert ("naive", 8) in seen and ("naive", 16) not in seen
    assert all((n, 16) in seen for n in ("batched", "package", "torch", "tiled"))
    assert all(r["ms"] > 0 and r["peak_bytes"] > 0 for r in rows)


def test_tiled_error_is_rounding_for_every_block_size():
    err = bench.tiled_error_by_block(T=20, block_sizes=(1, 3, 20, 64), n_heads=1, d_head=4)
    assert set(err) == {1, 3, 20, 64}
    assert all(e["float64"] < 1e-12 and e["float32"] < 1e-5 for e in err.values())


def test_kv_cache_bytes_per_token_matches_a_real_cache():
    from tfcourse.gpt import GPT, GPT_TINY
    model = GPT(GPT_TINY).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(3, 5, dtype=torch.long), cache)   # 批 3、5 个位置
    per_token = bench.kv_cache_bytes_per_token(GPT_TINY.n_layers, GPT_TINY.d_model, 4)
    assert cache.nbytes == 3 * 5 * per_token
    assert bench.kv_cache_bytes_per_token(6, 512, 4) == 24576
    with pytest.raises(ValueError):
        bench.kv_cache_bytes_per_token(0, 512)
