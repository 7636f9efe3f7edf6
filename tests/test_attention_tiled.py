"""分块注意力 tiled_attention（第 16 章）：与两种参考实现相等、掩码约定相同、不溢出、内存随 T 线性增长。"""
import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from tfcourse.attention import causal_mask, padding_mask, scaled_dot_product_attention, tiled_attention

pytestmark = pytest.mark.numerics


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """小张量：1 个线程更快，也不随核数变。"""


def _qkv(batch, T, S, D=8, Dv=None, seed=0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    Dv = D if Dv is None else Dv
    return (torch.randn(*batch, T, D, generator=gen, dtype=dtype),
            torch.randn(*batch, S, D, generator=gen, dtype=dtype),
            torch.randn(*batch, S, Dv, generator=gen, dtype=dtype))


SHAPES = [   # (批维度, T, S, D, D_v, block_size)
    ((), 1, 1, 4, 4, 64),
    ((), 5, 7, 4, 3, 1),             # 块大小 1：每个键单独一块
    ((), 10, 100, 8, 8, 64),         # S 不是块大小的倍数
    ((2,), 37, 50, 8, 5, 16),
    ((2, 3), 33, 65, 16, 16, 8),
    ((2, 3), 20, 20, 8, 8, 500),     # 块比 S 还大：一块就是全部
    ((1, 2), 64, 128, 8, 8, 64),     # 正好整除
]


@pytest.mark.parametrize("batch,T,S,D,Dv,block", SHAPES)
def test_equals_both_references(batch, T, S, D, Dv, block):
    q, k, v = _qkv(batch, T, S, D, Dv)
    ours = tiled_attention(q, k, v, block_size=block)
    package, _ = scaled_dot_product_attention(q, k, v)
    fused = F.scaled_dot_product_attention(q, k, v)
    assert ours.shape == package.shape == (*batch, T, Dv)
    assert (ours - package).abs().max() <= 1e-5
    assert (ours - fused).abs().max() <= 1e-5


def _random_mask(shape, seed, p=0.3):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=gen) > p


@pytest.mark.parametrize("block", [1, 7, 16, 64, 1000])
@pytest.mark.parametrize("kind", ["causal", "padding", "random", "key_broadcast", "query_broadcast"])
def test_masks_match_references(kind, block):
    B, H, T, S = 3, 2, 23, 41
    if kind == "causal":
        T = S
    q, k, v = _qkv((B, H), T, S, D=8, seed=4)
    if kind == "causal":
        mask = causal_mask(T)                                       # (T, T)
    elif kind == "padding":
        mask = padding_mask(torch.tensor([41, 17, 1]), max_len=S)[:, None]   # (B, 1, 1, S)
    elif kind == "random":
        mask = _random_mask((B, H, T, S), seed=block)
        mask[0, 1, 5] = False                                       # 一整行一个键都不许看
        mask[2, 0, :, 3] = False
    elif kind == "key_broadcast":
        mask = _random_mask((B, 1, T, 1), seed=1)                   # 最后一维为 1：对所有键广播
    else:
        mask = _random_mask((S,), seed=2)                           # 只有键那一维
    ours = tiled_attention(q, k, v, mask, block_size=block)
    package, _ = scaled_dot_product_attention(q, k, v, mask)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.expand(B, H, T, S))   # 它不收 1 维掩码
    assert not ours.isnan().any()
    assert (ours - package).abs().max() <= 1e-5
    assert (ours - fused).abs().max() <= 1e-5


def test_fully_masked_rows_give_zero_and_finite_gradients():
    q, k, v = _qkv((2,), 6, 10, seed=3)
    for t in (q, k, v):
        t.requires_grad_(True)
    mask = torch.ones(2, 6, 10, dtype=torch.bool)
    mask[0, 2] = False                                              # 第 0 句第 2 个位置：整行屏蔽
    mask[1] = False                                                 # 第 1 句：全部屏蔽
    out = tiled_attention(q, k, v, mask, block_size=3)
    assert torch.equal(out[0, 2], torch.zeros(8)) and torch.equal(out[1], torch.zeros(6, 8))
    ref, _ = scaled_dot_product_attention(q, k, v, mask)
    assert (out - ref).abs().max() <= 1e-5
    out.square().sum().backward()
    grads = [t.grad for t in (q, k, v)]
    assert all(torch.isfinite(g).all() for g in grads)
    q2, k2, v2 = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    scaled_dot_product_attention(q2, k2, v2, mask)[0].square().sum().backward()
    for g, g2 in zip(grads, (q2.grad, k2.grad, v2.grad)):
        assert (g - g2).abs().max() <= 1e-5                         # 反向传播也与参考实现一致


def test_no_overflow_for_large_scores():
    q, k, v = _qkv((2,), 9, 30, D=4, seed=5)
    q = q * 100.0
    k = k * 100.0                                                   # 打分 q·k/√D 大到上万
    scores = q @ k.transpose(-2, -1) / 2.0
    assert scores.abs().max() > 1e4
    assert torch.isinf(torch.exp(scores)).any()                    # 不减最大值直接取指数就会溢出
    out = tiled_attention(q, k, v, block_size=4)
    assert torch.isfinite(out).all()
    lo, hi = v.amin(dim=-2, keepdim=True), v.amax(dim=-2, keepdim=True)
    assert ((out >= lo - 1e-5) & (out <= hi + 1e-5)).all()          # 输出是各个值的凸组合
    q64, k64, v64 = q.double(), k.double(), v.double()
    ref, _ = scaled_dot_product_attention(q64, k64, v64)
    assert (tiled_attention(q64, k64, v64, block_size=4) - ref).abs().max() <= 1e-5


def test_broadcast_batch_dims_like_matmul():
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(2, 1, 11, 8, generator=gen)
    k = torch.randn(1, 3, 19, 8, generator=gen)
    v = torch.randn(1, 3, 19, 4, generator=gen)
    ours = tiled_attention(q, k, v, block_size=5)
    ref, _ = scaled_dot_product_attention(q, k, v)
    assert ours.shape == (2, 3, 11, 4) and (ours - ref).abs().max() <= 1e-5


class _LargestTemporary(TorchDispatchMode):
    """记下每个算子产生的最大张量（元素个数）：峰值内存的一个与 CPU 无关的代理量。"""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def _largest(fn):
    with torch.no_grad(), _LargestTemporary() as mode:
        fn()
    return mode.largest


def test_largest_temporary_is_linear_in_T():
    B, H, D, block = 1, 2, 16, 32
    tiled, full = {}, {}
    for T in (128, 256, 512):
        q, k, v = _qkv((B, H), T, T, D=D, seed=T)
        tiled[T] = _largest(lambda: tiled_attention(q, k, v, block_size=block))
        full[T] = _largest(lambda: scaled_dot_product_attention(q, k, v))
        assert tiled[T] <= B * H * T * max(block, D)                # 最大的是 (B, H, T, block) 的一块打分
        assert full[T] == B * H * T * T                             # 参照：普通实现组出整个 (T, S)
    assert tiled[512] == 4 * tiled[128]                             # T 翻 4 倍，最大临时张量也翻 4 倍
    assert full[512] == 16 * full[128]
    q, k, v = _qkv((B, H), 512, 512, D=D, seed=1)
    mask = causal_mask(512)
    assert _largest(lambda: tiled_attention(q, k, v, mask, block_size=block)) <= B * H * 512 * max(block, D)


def test_bad_inputs():
    q, k, v = _qkv((), 4, 6)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="block_size"):
            tiled_attention(q, k, v, block_size=bad)
    with pytest.raises(ValueError, match=r"无法广播.*\(4, 6\)"):
        tiled_attention(q, k, v, torch.ones(4, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="torch.bool"):
        tiled_attention(q, k, v, torch.ones(4, 6))
    with pytest.raises(ValueError, match="最后一维 D"):
        tiled_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="长度 S"):
        tiled_attention(q, k, v[:5])
    with pytest.raises(ValueError, match="至少 2 维"):
        tiled_attention(q[0], k, v)
