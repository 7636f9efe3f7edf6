"""计时小工具：把"快/慢"变成测量出来的数字，并拆开 RNN 的时间花在哪里。第 1 章引入，第 16 章大量使用。"""
from __future__ import annotations

import math
import time

import numpy as np

from ._checks import positive_int

__all__ = ["median_time", "rnn_vs_attention_timing", "rnn_variants", "rnn_timing_breakdown", "naive_attention",
           "batched_attention", "attention_implementations", "peak_tensor_bytes", "attention_benchmark",
           "tiled_error_by_block", "kv_cache_bytes_per_token"]


def median_time(fn, repeats: int = 5, warmup: int = 1) -> float:
    """运行 fn() 若干次，返回耗时的中位数（秒）。先预热 warmup 次，不计入。"""
    repeats = positive_int(repeats, "repeats")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def rnn_vs_attention_timing(lengths, batch: int = 16, d: int = 64, repeats: int = 5, seed: int = 0):
    """同一批随机输入 (B, T, d)，比较两种读法的墙钟时间（torch，CPU）。

    - RNN：h_t = tanh(h_{t-1} W_hh + x_t W_xh)，必须按 t = 1…T 串行算 T 步；
    - 自注意力：softmax(X Xᵀ/√d) X，所有位置在几次矩阵乘法里一起算完。
    返回每个长度一行的字典列表：T、两者的毫秒数、串行步数和大致的乘加次数。
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    w_hh = torch.randn(d, d, generator=gen) / math.sqrt(d)
    w_xh = torch.randn(d, d, generator=gen) / math.sqrt(d)

    def rnn(x):                                              # x: (B, T, d)
        h = torch.zeros(x.shape[0], d)
        for t in range(x.shape[1]):                          # 第 t 步要等第 t-1 步
            h = torch.tanh(h @ w_hh + x[:, t] @ w_xh)        # (B, d)
        return h

    def attention(x):                                        # x: (B, T, d)
        scores = x @ x.transpose(1, 2) / math.sqrt(d)        # (B, T, T)，所有位置两两打分
        return scores.softmax(dim=-1) @ x                    # (B, T, d)

    rows = []
    with torch.inference_mode():
        for T in lengths:
            T = positive_int(T, "序列长度 T")
            x = torch.randn(batch, T, d, generator=gen)
            rows.append(
                {
                    "T": T,
                    "rnn_ms": 1e3 * median_time(lambda x=x: rnn(x), repeats),
                    "attention_ms": 1e3 * median_time(lambda x=x: attention(x), repeats),
                    "rnn_sequential_steps": T,
                    "attention_sequential_steps": 1,
                    "rnn_macs": 2 * batch * T * d * d,
                    "attention_macs": 2 * batch * T * T * d,
                }
            )
    return rows


def rnn_variants(w_hh, w_xh) -> dict:
    """同一组权重 (d, d) 的三种 RNN 写法。

    输入 x (B, T, d)，都返回最后一步的隐藏状态 (B, d)：
    - "loop"：Python 循环，每步各算一次 x_t W_xh 和 h W_hh；
    - "loop_batched"：x_t W_xh 不依赖 h，在循环外一次算完，
      循环里只剩 h W_hh；
    - "nn_rnn"：torch.nn.RNN（同样的权重、无偏置），
      也先批量算输入投影，循环写在 C++ 里。
    """
    import torch

    d = w_hh.shape[0]
    cell = torch.nn.RNN(d, d, bias=False, batch_first=True)
    with torch.no_grad():                  # nn.RNN 算 x @ weight.T：存转置
        cell.weight_ih_l0.copy_(w_xh.T)
        cell.weight_hh_l0.copy_(w_hh.T)

    def loop(x):                           # x: (B, T, d)
        h = x.new_zeros(x.shape[0], d)
        for t in range(x.shape[1]):        # 第 t 步要等第 t-1 步
            # 每步两次小矩阵乘法
            h = torch.tanh(h @ w_hh + x[:, t] @ w_xh)      # (B, d)
        return h

    def loop_batched(x):
        xw = x @ w_xh                      # (B, T, d)：所有位置一次算完
        h = x.new_zeros(x.shape[0], d)
        for t in range(x.shape[1]):
            # 只剩必须等的那一半
            h = torch.tanh(h @ w_hh + xw[:, t])            # (B, d)
        return h

    def nn_rnn(x):
        return cell(x)[1][0]               # h_n: (1, B, d) -> (B, d)

    return {"loop": loop, "loop_batched": loop_batched, "nn_rnn": nn_rnn}


def rnn_timing_breakdown(lengths, batch: int = 16, d: int = 64, repeats: int = 5, seed: int = 0):
    """把"RNN 比注意力慢多少"拆开量（torch，CPU，同一批随机输入 (B, T, d)）。

    每个长度 T 量五个墙钟时间（毫秒；五种算法轮流跑 repeats 轮，各取最快的一次）：
    - loop_ms / loop_batched_ms / nn_rnn_ms：rnn_variants 的三种写法；
    - no_wait_ms：与 RNN 同样多的乘加（X W_xh 和 X W_hh 两次大矩阵乘法加 tanh），
      但各位置互不等待——如果没有串行，RNN 的活本来要花多久；
    - attention_ms：自注意力 softmax(X Xᵀ/√d) X。
    另给出串行步数和乘加次数（与 rnn_vs_attention_timing 相同的记法）。
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    w_hh = torch.randn(d, d, generator=gen) / math.sqrt(d)
    w_xh = torch.randn(d, d, generator=gen) / math.sqrt(d)
    variants = rnn_variants(w_hh, w_xh)

    def no_wait(x):                                          # 乘加与 RNN 相同，但没有依赖链
        return torch.tanh(x @ w_xh + x @ w_hh)               # (B, T, d)

    def attention(x):
        scores = x @ x.transpose(1, 2) / math.sqrt(d)        # (B, T, T)
        return scores.softmax(dim=-1) @ x                    # (B, T, d)

    fns = {f"{name}_ms": fn for name, fn in variants.items()}
    fns.update(no_wait_ms=no_wait, attention_ms=attention)
    rows = []
    with torch.inference_mode():
        for T in lengths:
            T = positive_int(T, "序列长度 T")
            x = torch.randn(batch, T, d, generator=gen)
            # 五种算法轮流各跑一次、重复 repeats 轮，各取最快的一次：
            # 机器忙起来时，几种算法受到的干扰差不多
            row = {"T": T}
            for key, fn in fns.items():
                fn(x)                                        # 预热
                row[key] = math.inf
            for _ in range(positive_int(repeats, "repeats")):
                for key, fn in fns.items():
                    t0 = time.perf_counter()
                    fn(x)
                    row[key] = min(row[key], 1e3 * (time.perf_counter() - t0))
            row.update(
                rnn_sequential_steps=T,
                attention_sequential_steps=1,
                rnn_macs=2 * batch * T * d * d,
                attention_macs=2 * batch * T * T * d,
            )
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# 第 16 章：注意力的几种写法——同一个结果，不同的时间和内存
# ---------------------------------------------------------------------------

def naive_attention(q, k, v, mask=None):
    """最直白的写法：Python 三重循环，一个数一个数地算点积、softmax 和加权和（第 3 章的公式逐字照搬）。

    q: (..., T, D)，k、v: (..., S, D)；mask 可广播到 (..., T, S)，True 表示"可以看"。返回 (..., T, D_v)。
    整行都被屏蔽时输出 0（与 scaled_dot_product_attention 相同）。只适合很短的序列。
    """
    import torch

    T, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    dtype = q.dtype
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q = q.expand(*lead, T, D).reshape(-1, T, D).tolist()               # (N, T, D)，N = 批 × 头
    k = k.expand(*lead, S, D).reshape(-1, S, D).tolist()
    Dv = v.shape[-1]
    v = v.expand(*lead, S, Dv).reshape(-1, S, Dv).tolist()
    allowed = None
    if mask is not None:
        allowed = mask.expand(*lead, T, S).reshape(-1, T, S).tolist()
    scale = 1.0 / math.sqrt(D)
    out = []
    for n in range(len(q)):
        rows = []
        for t in range(T):
            keys = [s for s in range(S) if allowed is None or allowed[n][t][s]]
            scores = [scale * sum(a * b for a, b in zip(q[n][t], k[n][s])) for s in keys]
            if not keys:                                               # 一个键都不许看：输出 0
                rows.append([0.0] * Dv)
                continue
            m = max(scores)                                            # 减去最大值，exp 不会溢出
            e = [math.exp(x - m) for x in scores]
            z = sum(e)
            rows.append([sum(w * v[n][s][j] for w, s in zip(e, keys)) / z for j in range(Dv)])
        out.append(rows)
    return torch.tensor(out, dtype=dtype).reshape(*lead, T, Dv)


def batched_attention(q, k, v, mask=None):
    """一次矩阵乘法算出全部打分 (…, T, S)，softmax，再乘 v：第 3 章的批量写法，不做任何检查。"""
    import torch

    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))          # (..., T, S)：整张表都在内存里
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = torch.nan_to_num(weights, nan=0.0)                   # 整行被屏蔽：0 而不是 NaN
    return weights @ v                                                 # (..., T, D_v)


def attention_implementations(block_size: int = 64) -> dict:
    """五种注意力写法，签名都是 fn(q, k, v, mask=None) -> 输出 (..., T, D_v)：

    - "naive"：Python 循环（naive_attention）；
    - "batched"：矩阵乘法 + softmax（batched_attention）；
    - "package"：课程包的 attention.scaled_dot_product_attention（第 3 章，带检查，也返回权重）；
    - "torch"：torch 的 F.scaled_dot_product_attention（融合内核）；
    - "tiled"：attention.tiled_attention，按 block_size 个键一块、在线 softmax，不存 (T, S) 的权重。
    """
    import torch.nn.functional as F

    from .attention import scaled_dot_product_attention, tiled_attention

    block_size = positive_int(block_size, "block_size")
    return {
        "naive": naive_attention,
        "batched": batched_attention,
        "package": lambda q, k, v, mask=None: scaled_dot_product_attention(q, k, v, mask)[0],
        "torch": lambda q, k, v, mask=None: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        "tiled": lambda q, k, v, mask=None: tiled_attention(q, k, v, mask, block_size=block_size),
    }


def peak_tensor_bytes(fn, *args, **kwargs):
    """运行 fn(*args, **kwargs)，返回 (结果, 运行期间同时存活的张量字节数的峰值)。

    只数运行期间新分配的张量（输入不算），按存储（storage）计，视图不重复计；在 CPU 上也能用
    （torch 没有 CPU 版的 max_memory_allocated）。数的是 torch 算子返回的张量：一个融合内核
    内部的临时缓冲区不在其中，Python 列表也不在其中。
    """
    import weakref

    from torch.utils._python_dispatch import TorchDispatchMode

    class _Tracker(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live, self.now, self.peak = {}, 0, 0

        def _drop(self, key):
            entry = self.live.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] == 0:
                    self.now -= entry[0]
                    del self.live[key]

        def _add(self, t):
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key in self.live:
                self.live[key][1] += 1
            else:
                self.live[key] = [storage.nbytes(), 1]
                self.now += storage.nbytes()
                self.peak = max(self.peak, self.now)
            weakref.finalize(t, self._drop, key)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            import torch

            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.device.type != "meta":
                    self._add(t)
            return out

    with _Tracker() as tracker:
        result = fn(*args, **kwargs)
    return result, tracker.peak


def attention_benchmark(lengths, implementations=None, *, n_heads: int = 2, d_head: int = 32,
                        repeats: int = 3, limit_s: float = 0.5, limited=("naive",), memory: bool = True,
                        seed: int = 0):
    """每种写法在每个长度 T（自注意力：S = T，批大小 1）上的耗时与内存峰值。

    先在 peak_tensor_bytes 里运行 1 次（量内存，也当作预热），再取 repeats 次耗时的中位数。
    limited 里的写法（默认只有 Python 循环）某个长度的耗时超过 limit_s 秒，就认为它在更长的序列上
    "不再实用"，不再往下量；其余写法每个长度都量（它们停在哪里由内存决定，不由这台机器此刻忙不忙决定）。
    返回字典列表，每行 {"impl", "T", "ms", "peak_bytes"}（没量内存时 peak_bytes 为 None）。
    """
    import torch

    impls = attention_implementations() if implementations is None else dict(implementations)
    gen = torch.Generator().manual_seed(seed)
    stopped, rows = set(), []
    with torch.inference_mode():
        for T in lengths:
            T = positive_int(T, "序列长度 T")
            q, k, v = (torch.randn(1, n_heads, T, d_head, generator=gen) for _ in range(3))
            for name, fn in impls.items():
                if name in stopped:
                    continue
                peak = peak_tensor_bytes(fn, q, k, v)[1] if memory else None   # 同时是预热
                ms = 1e3 * median_time(lambda: fn(q, k, v), repeats=repeats, warmup=0 if memory else 1)
                rows.append({"impl": name, "T": T, "ms": ms, "peak_bytes": peak})
                if name in limited and ms > 1e3 * limit_s:
                    stopped.add(name)
    return rows


def tiled_error_by_block(T: int = 300, block_sizes=(1, 7, 16, 64, 300, 512), *, n_heads: int = 4,
                         d_head: int = 32, causal: bool = True, seed: int = 0) -> dict:
    """tiled_attention 与整张表算出的 scaled_dot_product_attention 的最大绝对误差，按块大小。

    float32 与 float64 各量一次（float64 的误差说明算法本身是精确的，剩下的只是舍入）。
    返回 {block_size: {"float32": 误差, "float64": 误差}}。
    """
    import torch

    from .attention import causal_mask, scaled_dot_product_attention, tiled_attention

    T = positive_int(T, "序列长度 T")
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, n_heads, T, d_head, generator=gen, dtype=torch.float64) for _ in range(3))
    mask = causal_mask(T) if causal else None
    out = {}
    with torch.inference_mode():
        for b in block_sizes:
            b = positive_int(b, "block_size")
            out[b] = {}
            for dtype in (torch.float32, torch.float64):
                a = [x.to(dtype) for x in (q, k, v)]
                ref = scaled_dot_product_attention(*a, mask)[0].double()
                got = tiled_attention(*a, mask, block_size=b).double()
                out[b][str(dtype).removeprefix("torch.")] = float((got - ref).abs().max())
    return out


def kv_cache_bytes_per_token(n_layers: int, d_model: int, bytes_per_element: int = 4) -> int:
    """KV 缓存每多存一个位置要多占的字节数：2（k 和 v）· 层数 · d_model · 每个数的字节数（批大小 1）。"""
    return 2 * positive_int(n_layers, "n_layers") * positive_int(d_model, "d_model") \
        * positive_int(bytes_per_element, "bytes_per_element")
