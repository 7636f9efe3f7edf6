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
