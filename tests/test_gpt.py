"""tfcourse.gpt 与 KV 缓存：因果性、缓存不改变结果、小模型能背下一批、错误信息。"""
import pytest
import torch

from tfcourse.attention import KVCache, MultiHeadAttention
from tfcourse.gpt import GPT, GPT_TINY, GPTConfig, generate, mean_nll, train_lm


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """小模型一个线程最快；机器忙时多线程会慢十倍。"""


def _model(seed=0, **changes):
    torch.manual_seed(seed)
    return GPT(GPT_TINY.replace(**changes)).eval()


def test_shapes_and_tied_head():
    m = _model()
    ids = torch.randint(0, 50, (3, 10))
    assert m(ids).shape == (3, 10, 50)
    assert m.lm_head.weight is m.tok_emb.weight


@pytest.mark.numerics
def test_a_later_token_never_moves_an_earlier_logit():
    m = _model(1)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 50, (2, 20), generator=g)
    base = m(ids)
    for t in (0, 7, 19):
        changed = ids.clone()
        changed[:, t] = (changed[:, t] + 1 + torch.arange(2)) % 50
        out = m(changed)
        if t:
            assert (out[:, :t] - base[:, :t]).abs().max() <= 1e-6      # 之前的位置纹丝不动
        assert (out[:, t:] - base[:, t:]).abs().max() > 1e-4           # 这个位置及以后会变


@pytest.mark.numerics
def test_cached_forward_equals_full_forward():
    m = _model(2)
    ids = torch.randint(0, 50, (2, 30))
    full = m(ids)
    cache = m.new_cache()
    parts = [m(ids[:, :12], cache)] + [m(ids[:, t:t + 1], cache) for t in range(12, 25)] + [m(ids[:, 25:], cache)]
    assert cache.length == 30
    assert (torch.cat(parts, dim=1) - full).abs().max() < 1e-5


@pytest.mark.numerics
def test_kv_cache_changes_nothing_for_200_greedy_steps_and_seeded_samples():
    m = _model(3, max_len=256, vocab_size=40)
    prompt = torch.randint(0, 40, (2, 5), generator=torch.Generator().manual_seed(1))
    fast = generate(m, prompt, 200, temperature=0)
    slow = generate(m, prompt, 200, temperature=0, use_cache=False)
    assert fast.shape == (2, 205) and torch.equal(fast, slow)
    # 沿同一条路径，逐位置比较 logits
    cache = m.new_cache()
    step = torch.cat([m(fast[:, :5], cache)[:, -1:]] + [m(fast[:, t:t + 1], cache) for t in range(5, 204)], 1)
    assert (step - m(fast[:, :204])[:, 4:]).abs().max() < 1e-5
    for kw in ({"temperature": 1.0}, {"temperature": 0.8, "top_k": 5}, {"temperature": 1.2, "top_p": 0.9}):
        a = generate(m, prompt, 60, generator=torch.Generator().manual_seed(7), **kw)
        b = generate(m, prompt, 60, generator=torch.Generator().manual_seed(7), use_cache=False, **kw)
        assert torch.equal(a, b), kw


def test_cache_memory_matches_the_formula():
    m = _model(4)
    cache = m.new_cache()
    m(torch.randint(0, 50, (3, 17)), cache)
    c = GPT_TINY
    assert cache.nbytes == 2 * c.n_layers * 3 * c.n_heads * c.d_head * 17 * 4
    assert isinstance(cache, KVCache) and len(cache) == c.n_layers


def test_attention_without_cache_is_unchanged_by_the_new_argument():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 6, 16)
    a, wa = mha(x)
    b, wb = mha(x, x, x, None, cache=None)
    assert torch.equal(a, b) and torch.equal(wa, wb)


def test_tiny_gpt_overfits_one_batch():
    torch.manual_seed(0)
    m = GPT(GPT_TINY.replace(vocab_size=20, max_len=16))
    batch = torch.randint(0, 20, (4, 16), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(150):
        logits = m(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 2.5 and losses[-1] < 0.1             # ln 20 ≈ 3.0 → 几乎背下
    m.eval()
    assert torch.equal(generate(m, batch[:, :1], 15, temperature=0), batch)


def test_generate_restores_training_mode_and_accepts_1d_prompt():
    m = _model(5)
    m.train()
    out = generate(m, [1, 2, 3], 4, temperature=0)
    assert out.shape == (1, 7) and m.training


@pytest.mark.parametrize("call, message", [
    (lambda m: generate(m, torch.zeros(1, 60, dtype=torch.long), 5), "超过了模型的 max_len=64"),
    (lambda m: m(torch.zeros(1, 65, dtype=torch.long)), "超过 max_len=64"),
    (lambda m: m(torch.tensor([[0, 50]])), r"ids 应在词表范围 0…49 之内"),
    (lambda m: m(torch.tensor([[-1, 3]])), r"ids 应在词表范围 0…49 之内"),
    (lambda m: m(torch.zeros(2, 3)), r"整数 torch.Tensor"),
    (lambda m: generate(m, [1, 2], 3, temperature=-1), "temperature 应为 ≥ 0"),
    (lambda m: generate(m, [1, 2], 3, top_k=0), "top_k 应为 ≥ 1"),
    (lambda m: generate(m, [1, 2], 3, top_p=0), r"top_p 应在 \(0, 1\]"),
])
def test_bad_input_is_a_chinese_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call(_model())


def test_config_validation():
    with pytest.raises(ValueError, match="d_model 必须能被 n_heads 整除"):
        GPTConfig(vocab_size=10, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="GPTConfig.vocab_size 应为正整数"):
        GPTConfig(vocab_size=0)
    with pytest.raises(ValueError, match="dropout"):
        GPTConfig(vocab_size=10, dropout=1.0)
    with pytest.raises(Exception):
        GPT_TINY.d_model = 7                                 # 冻结


def test_train_lm_lowers_held_out_loss_and_mean_nll_counts_every_token():
    torch.manual_seed(0)
    pattern = torch.tensor([1, 2, 3, 4, 5, 6, 7] * 60)                # 周期为 7：学会了就几乎零损失
    m = GPT(GPT_TINY.replace(vocab_size=10, max_len=16))
    before = mean_nll(m, pattern[:100], 16)
    hist = train_lm(m, pattern, steps=60, batch_size=8, block=16, peak_lr=1e-2, warmup_steps=5,
                    progress=False, eval_fn=lambda: mean_nll(m, pattern[:100], 16), eval_every=20)
    assert hist["eval_steps"] == [20, 40, 60] and len(hist["loss"]) == 60
    assert before > 2.0 and hist["eval"][-1] < 0.2
    ids = torch.randint(0, 10, (37,))
    with torch.no_grad():                                             # 37 个 token、窗口 16：两个整窗 + 4 个
        manual = sum(torch.nn.functional.cross_entropy(m(w[None, :-1])[0], w[1:], reduction="sum")
                     for w in (ids[:17], ids[16:33], ids[32:]))
    assert abs(mean_nll(m, ids, 16) - manual.item() / 36) < 1e-5


def test_train_lm_trains_with_the_thread_count_it_is_given_and_restores_it():
    """num_threads：训练期间（验证时也是）用给定的线程数，结束后恢复；坏的线程数给中文错误。"""
    m = GPT(GPT_TINY.replace(vocab_size=10, max_len=16))
    ids = torch.tensor([1, 2, 3, 4] * 40)
    before = torch.get_num_threads()
    want = 1 if before != 1 else 2
    seen = []
    train_lm(m, ids, steps=4, batch_size=2, block=8, peak_lr=1e-2, progress=False, num_threads=want,
             eval_fn=lambda: seen.append(torch.get_num_threads()) or 0.0, eval_every=2)
    assert seen == [want, want] and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads"):
        train_lm(m, ids, steps=1, batch_size=2, block=8, peak_lr=1e-2, progress=False, num_threads=0)
    assert torch.get_num_threads() == before


def test_suppressed_tokens_are_never_written_and_match_transformers():
    """suppress_ids：哪怕是打分最高的 token 也不写；处理后的打分与 transformers 的 SuppressTokensLogitsProcessor 相同。"""
    from transformers.generation.logits_process import SuppressTokensLogitsProcessor

    m = _model(2)
    prompt = torch.arange(4)[:, None]
    free = generate(m, prompt, 30, temperature=0)
    top = int(free[:, 1:].flatten().mode().values)             # 不屏蔽时贪心写得最多的 token
    assert (free[:, 1:] == top).any()
    for rule in (dict(temperature=0), dict(temperature=1.0), dict(top_p=0.9), dict(top_k=3)):
        out = generate(m, prompt, 30, suppress_ids=[top, 3], generator=torch.Generator().manual_seed(0), **rule)
        assert not torch.isin(out[:, 1:], torch.tensor([top, 3])).any()
    logits = torch.randn(3, 50)
    ours = logits.clone()
    ours[:, [7, 3]] = float("-inf")
    theirs = SuppressTokensLogitsProcessor([7, 3], device="cpu")(torch.zeros(3, 1, dtype=torch.long), logits.clone())
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs)) and torch.equal(ours[:, :3], theirs[:, :3])
    assert torch.equal(generate(m, prompt, 5, temperature=0, suppress_ids=[]), generate(m, prompt, 5, temperature=0))
    with pytest.raises(ValueError, match="suppress_ids"):
        generate(m, prompt, 3, suppress_ids=[50])
    with pytest.raises(ValueError, match="suppress_ids"):
        generate(m, prompt, 3, suppress_ids="□")


def test_guidance_follows_the_formula_and_matches_transformers():
    """无分类器引导：每一步的打分是 u + γ(c − u)（与 transformers 的 ClassifierFreeGuidanceLogitsProcessor 相同）；
    γ = 1 不改变贪心的结果；反面的那几行接着写同样的 token；缓存与不缓存结果相同。"""
    from transformers.generation.logits_process import ClassifierFreeGuidanceLogitsProcessor

    from tfcourse.sampling import guide_logits

    m = _model(3)
    g0 = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, 50, (64, 3), generator=g0)
    negative = prompt.clone()                                   # 反面提示只换掉开头的字（像换一个控制 token）
    negative[:, 0] = torch.randint(0, 50, (64,), generator=g0)
    with torch.no_grad():                                      # 第一步：手算 γ = 25 的引导（没训练过的小模型几乎只会重复上一个字，γ 小了看不出差别），贪心取最大
        c, u = m(prompt)[:, -1], m(negative)[:, -1]
    want = (u + 25.0 * (c - u)).argmax(-1)
    out = generate(m, prompt, 1, temperature=0, guidance_scale=25.0, negative_prompt_ids=negative)
    assert out.shape == (64, 4) and torch.equal(out[:, -1], want) and torch.equal(out[:, :3], prompt)
    assert not torch.equal(want, c.argmax(-1))                 # 引导确实换掉了至少一个 token（否则这一条白测）
    theirs = ClassifierFreeGuidanceLogitsProcessor(3.0)(prompt, torch.cat([c, u]))
    torch.testing.assert_close(guide_logits(c, u, 3.0), theirs, rtol=0, atol=1e-6)
    # 多步：γ = 1 与不引导的贪心相同；缓存与重算相同；抽样时同一种子同一结果
    plain = generate(m, prompt, 12, temperature=0)
    assert torch.equal(generate(m, prompt, 12, temperature=0, guidance_scale=1.0, negative_prompt_ids=negative), plain)
    g = dict(guidance_scale=2.5, negative_prompt_ids=negative, temperature=0.8, top_p=0.9)
    a = generate(m, prompt, 12, generator=torch.Generator().manual_seed(0), **g)
    b = generate(m, prompt, 12, generator=torch.Generator().manual_seed(0), use_cache=False, **g)
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="negative_prompt_ids"):
        generate(m, prompt, 3, guidance_scale=2.0)
    with pytest.raises(ValueError, match="同形状"):
        generate(m, prompt, 3, guidance_scale=2.0, negative_prompt_ids=negative[:2])
    with pytest.raises(ValueError, match="guidance_scale"):
        generate(m, prompt, 3, guidance_scale=float("nan"), negative_prompt_ids=negative)
