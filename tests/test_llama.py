"""tfcourse.llama：每一块对照它的参照（torch.nn.RMSNorm、transformers 的 Llama / Qwen3），整个模型的 logits 与
贪心续写对照 transformers，KV 缓存只存 n_kv_heads 组，RoPE 的打分只依赖相对位置，错误信息说清楚。"""
import math

import pytest
import torch
from torch import nn

from tfcourse import gpt, llama
from tfcourse.llama import (GroupedQueryAttention, LlamaConfig, LlamaGPT, RMSNorm, SwiGLU, apply_rope,
                            copy_from_transformers, interleaved_to_half, kv_bytes_per_token, rope_cos_sin)

transformers = pytest.importorskip("transformers")
from transformers.models.llama import modeling_llama as ml  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """小模型一个线程最快。"""


def _rel(a, b) -> float:
    """每一行的最大差除以这一行（参照）的最大绝对值，取最坏的一行。"""
    return float(((a - b).abs().amax(-1) / b.abs().amax(-1)).max())


def _hf(kind="llama", kv=2, tie=True, base=10000.0, heads=4, hidden=64, head_dim=None, seed=0):
    """一个随机权重的小 transformers 模型：权重放大到 N(0, 0.3²)，logits 拉开，贪心很少遇到并列。"""
    torch.manual_seed(seed)
    kw = dict(vocab_size=97, hidden_size=hidden, intermediate_size=160, num_hidden_layers=2,
              num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=160,
              tie_word_embeddings=tie, rope_theta=base,       # transformers 4 与 5 都认得
              rms_norm_eps=1e-6)
    if kind == "qwen3":
        m = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=head_dim or hidden // heads, **kw))
    else:
        m = transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3) if p.dim() > 1 else p.uniform_(0.5, 1.5)
    m.generation_config.eos_token_id = None                        # 写满 n 个，不在"句末"停下
    return m.eval()


# ---------------------------------------------------------------- 每一块

@pytest.mark.numerics
def test_rmsnorm_equals_torch_and_llama_rmsnorm():
    x = torch.randn(3, 7, 48) * 5 + 2
    ours = RMSNorm(48, eps=1e-6)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
    ref = nn.RMSNorm(48, eps=1e-6)
    hf = ml.LlamaRMSNorm(48, eps=1e-6)
    ref.load_state_dict(ours.state_dict())
    hf.load_state_dict(ours.state_dict())
    assert _rel(ours(x), ref(x)) < 1e-6 and _rel(ours(x), hf(x)) < 1e-6
    # 与 LayerNorm 不同：输入加一个常数，输出跟着变（RMSNorm 不减均值）
    assert (ours(x + 3.0) - ours(x)).abs().max() > 0.1


@pytest.mark.numerics
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_rope_tables_and_rotation_equal_transformers(base):
    cfg = transformers.LlamaConfig(hidden_size=64, num_attention_heads=2, max_position_embeddings=4096,
                                   rope_theta=base)
    rot = ml.LlamaRotaryEmbedding(cfg)
    pos = torch.tensor([[0, 1, 5, 63, 64, 1000, 4095]])
    cos_ref, sin_ref = rot(torch.zeros(1), pos)
    cos, sin = rope_cos_sin(pos[0], 32, base)
    assert (cos - cos_ref[0]).abs().max() < 1e-6 and (sin - sin_ref[0]).abs().max() < 1e-6
    q, k = torch.randn(2, 1, 2, 7, 32).unbind(0)
    q_ref, k_ref = ml.apply_rotary_pos_emb(q, k, cos_ref, sin_ref)
    assert (apply_rope(q, cos, sin) - q_ref).abs().max() < 1e-5
    assert (apply_rope(k, cos, sin) - k_ref).abs().max() < 1e-5


@pytest.mark.numerics
def test_interleaved_and_half_differ_unless_the_weights_are_permuted():
    D = 16
    cos, sin = rope_cos_sin(torch.arange(10), D)
    q, k = torch.randn(2, 10, D).unbind(0)
    half = apply_rope(q, cos, sin) @ apply_rope(k, cos, sin).T
    inter = apply_rope(q, cos, sin, "interleaved") @ apply_rope(k, cos, sin, "interleaved").T
    assert (half - inter).abs().max() > 0.1                        # 同样的 q、k，两种配对给出不同的打分
    perm = interleaved_to_half(D)
    permuted = apply_rope(q[:, perm], cos, sin) @ apply_rope(k[:, perm], cos, sin).T
    assert (permuted - inter).abs().max() < 1e-4                   # 置换维度之后完全相同
    # 每对维度的长度不变：旋转不改模长
    assert (apply_rope(q, cos, sin).norm(dim=-1) - q.norm(dim=-1)).abs().max() < 1e-5


@pytest.mark.numerics
def test_rope_scores_depend_only_on_the_offset():
    D = 32
    q, k = torch.randn(2, D).unbind(0)
    cos, sin = rope_cos_sin(torch.arange(200), D)
    qr, kr = apply_rope(q.expand(200, D), cos, sin), apply_rope(k.expand(200, D), cos, sin)
    scores = qr @ kr.T                                             # (m, n)：位置 m 的查询对位置 n 的键
    for offset in (0, 3, 40):
        diag = torch.diagonal(scores, -offset)
        assert float(diag.max() - diag.min()) < 1e-4 * float(scores.abs().max())
    assert float((torch.diagonal(scores, 0)[0] - torch.diagonal(scores, -40)[0]).abs()) > 1e-3   # 偏移不同，打分不同


@pytest.mark.numerics
def test_swiglu_equals_llama_mlp_and_its_width_is_8_over_3():
    cfg = transformers.LlamaConfig(hidden_size=48, intermediate_size=128, num_attention_heads=4)
    ref = ml.LlamaMLP(cfg)
    ours = SwiGLU(48, 128)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(4, 9, 48)
    assert _rel(ours(x), ref(x)) < 1e-5
    assert llama.swiglu_hidden(128) == 384 and llama.swiglu_hidden(4096, 256) == 11008   # Llama-7B 的宽度
    d = 96
    assert 3 * d * llama.swiglu_hidden(d, 1) == 2 * d * 4 * d         # 8/3·d：与 GELU 的 4d 同样多的参数


@pytest.mark.numerics
@pytest.mark.parametrize("kv", [4, 2, 1])
def test_grouped_query_attention_equals_llama_attention(kv):
    cfg = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=kv,
                                   max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    ref = ml.LlamaAttention(cfg, layer_idx=0).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0, 0.2)
    ours = GroupedQueryAttention(64, 4, kv).eval()
    ours.load_state_dict(ref.state_dict(), strict=False)
    x = torch.randn(2, 11, 64)
    pos = torch.arange(11)[None]
    cos_ref, sin_ref = ml.LlamaRotaryEmbedding(cfg)(x, pos)
    mask = torch.full((11, 11), float("-inf")).triu(1)[None, None]
    want, _ = ref(x, (cos_ref, sin_ref), mask)
    cos, sin = rope_cos_sin(torch.arange(11), 16)
    got = ours(x, cos, sin, torch.ones(11, 11, dtype=torch.bool).tril())
    assert _rel(got, want) < 1e-5
    assert ours.k_proj.weight.shape == (kv * 16, 64)               # 键、值的投影只有 kv 组


def test_kv_cache_stores_only_the_key_value_groups():
    for kv in (4, 2, 1):
        m = LlamaGPT(LlamaConfig(vocab_size=50, d_model=32, n_heads=4, n_kv_heads=kv, d_ff=64, max_len=64)).eval()
        cache = m.new_cache()
        with torch.no_grad():
            m(torch.randint(0, 50, (1, 10)), cache)
        assert cache.nbytes == 10 * kv_bytes_per_token(m.config) == 10 * 2 * 2 * kv * 8 * 4
    assert kv_bytes_per_token(gpt.GPT_SMALL) == 2 * 2 * 64 * 4    # GPTConfig：每个头一份（n_kv_heads = n_heads）


# ---------------------------------------------------------------- 整个模型

# 另一条 CPU 路径（make numerics）上只再跑 GQA 的两种（Llama 与 Qwen3）：其余设置走的是同样的内核
_SECOND_PATH = pytest.mark.numerics
WHOLE = [pytest.param(kind, kv, tie, base, marks=[_SECOND_PATH] if kv == 2 else [], id=f"{kind}-{kv}-{tie}-{base:g}")
         for kind in ("llama", "qwen3")
         for kv, tie, base in [(4, True, 10000.0), (2, False, 500000.0), (1, True, 1e6), (1, False, 10000.0)]]


@pytest.mark.parametrize("kind,kv,tie,base", WHOLE)
def test_whole_model_logits_equal_transformers(kind, kv, tie, base):
    hf = _hf(kind, kv, tie, base, head_dim=24 if kind == "qwen3" else None)
    ours = copy_from_transformers(hf)
    assert ours.config.qk_norm == (kind == "qwen3") and ours.config.tie_embeddings == tie
    ids = torch.randint(0, 97, (2, 150), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want, got = hf(ids).logits, ours(ids)
    assert _rel(got, want) < 1e-5


@pytest.mark.parametrize("kind,kv", [("llama", 4), pytest.param("llama", 1, marks=_SECOND_PATH), ("qwen3", 2)])
def test_greedy_generation_with_the_kv_cache_equals_transformers(kind, kv):
    hf = _hf(kind, kv, seed=3)
    ours = copy_from_transformers(hf)
    for start in range(3):
        prompt = torch.randint(1, 97, (1, 8), generator=torch.Generator().manual_seed(start))
        want = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=40, do_sample=False,
                           pad_token_id=0)
        got = gpt.generate(ours, prompt, 40, temperature=0.0)
        if not torch.equal(got, want):                             # 只允许真正的并列：参照的前两名差 < 1e-4
            i = int((got != want).nonzero()[0, 1])
            with torch.no_grad():
                top = hf(want[:, :i]).logits[0, -1].topk(2).values
            assert float(top[0] - top[1]) < 1e-4, (kind, kv, start, i)


def test_cached_forward_equals_full_forward_and_past_the_training_window():
    torch.manual_seed(0)
    m = LlamaGPT(LlamaConfig(vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, d_ff=64, max_len=200)).eval()
    ids = torch.randint(0, 50, (2, 150))
    with torch.no_grad():
        full = m(ids)
        cache = m.new_cache()
        parts = [m(ids[:, :70], cache)] + [m(ids[:, t:t + 1], cache) for t in range(70, 150)]
    assert (torch.cat(parts, 1) - full).abs().max() < 1e-4 and cache.length == 150


def test_a_later_token_never_moves_an_earlier_logit():
    torch.manual_seed(1)
    m = LlamaGPT(LlamaConfig(vocab_size=50, d_model=32, n_heads=2, n_kv_heads=1, d_ff=64, max_len=64)).eval()
    ids = torch.randint(0, 50, (1, 20))
    changed = ids.clone()
    changed[0, 9] = (changed[0, 9] + 1) % 50
    with torch.no_grad():
        a, b = m(ids), m(changed)
    assert (a[:, :9] - b[:, :9]).abs().max() < 1e-6 and (a[:, 9:] - b[:, 9:]).abs().max() > 1e-4


def test_a_tiny_llama_overfits_one_batch():
    torch.manual_seed(0)
    m = LlamaGPT(LlamaConfig(vocab_size=20, d_model=32, n_heads=4, n_kv_heads=2, d_ff=64, max_len=16))
    batch = torch.randint(0, 20, (4, 16), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    for _ in range(150):
        loss = nn.functional.cross_entropy(m(batch[:, :-1]).flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1 * math.log(20)


# ---------------------------------------------------------------- 错误信息

@pytest.mark.parametrize("make,words", [
    (lambda: LlamaConfig(vocab_size=10, n_heads=4, n_kv_heads=3), ["n_kv_heads", "倍数"]),
    (lambda: LlamaConfig(vocab_size=10, d_model=30, n_heads=4), ["d_model", "整除"]),
    (lambda: LlamaConfig(vocab_size=10, d_model=12, n_heads=4), ["偶数"]),
    (lambda: LlamaGPT(LlamaConfig(vocab_size=10, max_len=8))(torch.zeros(1, 9, dtype=torch.long)), ["max_len=8"]),
    (lambda: LlamaGPT(LlamaConfig(vocab_size=10))(torch.tensor([[3, 10]])), ["0…9"]),
    (lambda: copy_from_transformers(nn.Linear(2, 2)), ["LlamaForCausalLM", "Linear"]),
    (lambda: apply_rope(torch.zeros(2, 4), *rope_cos_sin(torch.arange(2), 4), style="rotated"), ["half"]),
    (lambda: gpt.generate(nn.Linear(2, 2), torch.zeros(1, 1, dtype=torch.long), 1), ["LlamaGPT"]),
])
def test_errors_name_what_was_expected(make, words):
    with pytest.raises(ValueError) as e:
        make()
    assert all(w in str(e.value) for w in words), str(e.value)


def test_unsupported_transformers_settings_are_refused():
    cfg = transformers.LlamaConfig(hidden_size=32, num_attention_heads=2, num_hidden_layers=1, intermediate_size=64,
                                   vocab_size=20, rope_scaling={"rope_type": "linear", "factor": 2.0})
    with pytest.raises(ValueError, match="rope_type"):
        copy_from_transformers(transformers.LlamaForCausalLM(cfg))
    cfg = transformers.LlamaConfig(hidden_size=32, num_attention_heads=2, num_hidden_layers=1, intermediate_size=64,
                                   vocab_size=20, attention_bias=True)
    with pytest.raises(ValueError, match="attention_bias"):
        copy_from_transformers(transformers.LlamaForCausalLM(cfg))
