"""采样探索器：预先算好的表与 sampling 模块一致、滑块夹在范围内、初始视图是生成时的设置。"""
import json

import pytest
import torch

from tfcourse import sampling
from tfcourse.gpt import GPT, GPT_TINY
from tfcourse.widgets import SamplingExplorer
from tfcourse.widgets.sampling_explorer import trace_generation

ITOS = [chr(0x4E00 + i) for i in range(GPT_TINY.vocab_size)]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = GPT(GPT_TINY).eval()
    with torch.no_grad():                      # 让分布有尖有平：放大打分
        m.lm_head.weight.mul_(8.0)
    return m


@pytest.fixture(scope="module")
def trace(model):
    return trace_generation(model, [1, 2, 3], 12, temperature=1.0, top_p=0.9, seed=3, n_top=10)


def test_initial_view_is_the_generation_setting(trace):
    w = SamplingExplorer(trace, ITOS)
    r = w.readout()
    assert (r["step"], r["temperature"], r["top_k"], r["top_p"]) == (0, 1.0, 0, 0.9)
    assert r["prefix"] == "".join(ITOS[i] for i in (1, 2, 3))
    assert 0 <= r["drawn_rank"] < r["n_kept"]  # 抽中的字在生成时的规则下一定留着（排名在前 n_kept 里）


def test_tables_agree_with_the_sampling_module(model, trace):
    ids = torch.tensor([trace["ids"]])
    with torch.no_grad():
        logits = model(ids[:, :-1])[0, 2:]                   # (n, V)
    w = SamplingExplorer(trace, ITOS)
    for step, temp, k, p in ((0, 1.0, 0, 0.9), (5, 0.5, 3, 1.0), (11, 1.5, 5, 0.5), (7, 0.8, 50, 0.95)):
        w.set(step=step, temperature=temp, top_k=k, top_p=p)
        r = w.readout()
        want = sampling.apply_sampling_rules(logits[step], temp, top_k=k or None, top_p=None if p == 1 else p)
        assert r["n_kept"] == int(torch.isfinite(want).sum())
        probs = (logits[step] / temp).softmax(-1)
        assert r["probs"][0] == pytest.approx(probs.max().item(), abs=1e-4)
        assert r["kept_mass"] == pytest.approx(probs[torch.isfinite(want)].sum().item(), abs=1e-4)
        assert r["drawn"] == ITOS[trace["ids"][3 + step]]
    assert trace["ids"] == [1, 2, 3] + trace["ids"][3:] and len(trace["ids"]) == 15


def test_sliders_clamp_and_set_snaps_to_the_grid(trace):
    w = SamplingExplorer(trace, ITOS)
    w.step = 99
    assert w.step == 11
    w.step = -3
    assert w.step == 0
    w.t_index, w.k_index, w.p_index = 50, -1, 50
    assert (w.t_index, w.k_index, w.p_index) == (len(w.temperatures) - 1, 0, len(w.top_ps) - 1)
    w.set(temperature=1.1, top_k=4, top_p=0.88)
    r = w.readout()
    assert (r["temperature"], r["top_k"], r["top_p"]) in {(1.0, 3, 0.9), (1.2, 3, 0.9), (1.0, 5, 0.9), (1.2, 5, 0.9)}


def test_state_is_json_and_compact(trace):
    state = json.dumps(SamplingExplorer(trace, ITOS).get_state())
    assert len(state) < 400_000


def test_bad_arguments(model):
    with pytest.raises(ValueError, match="trace 应为"):
        SamplingExplorer({"ids": []}, ITOS)
    with pytest.raises(ValueError, match="温度网格"):
        trace_generation(model, [1], 3, temperature=0.7)


def test_suppressed_token_is_never_drawn_or_kept(model, trace):
    """suppress_ids 在小部件的表里也生效：被屏蔽的 token 概率为 0，不算在留下的候选里，也不会被抽中。"""
    top = trace["cand_ids"][0][0]                              # 不屏蔽时第 1 步打分最高的 token
    t2 = trace_generation(model, [1, 2, 3], 12, temperature=1.0, top_p=0.9, seed=3, n_top=10, suppress_ids=[top])
    assert top not in t2["ids"][3:]
    assert all(top not in row for row in t2["cand_ids"])       # 打分 −∞：排在全部候选的最后，进不了前 10
    w = SamplingExplorer(t2, ITOS)
    assert all(0 <= r < k for r, k in zip(t2["drawn_rank"], [w.set(step=s).readout()["n_kept"] for s in range(12)]))



def test_clean_text_masks_words_across_tokens_and_after_the_prefix(trace):
    """clean_text：生成的文字整段过一遍（跨 token 的词也遮住），候选接在那一步的前缀后面过一遍；别的字不动。"""
    from tfcourse.safety import mask_offensive

    shown = {10: "小", 11: "日", 12: "本", 20: "好"}
    itos = lambda i: shown.get(i, ITOS[i])                     # noqa: E731
    cand = [row[:] for row in trace["cand_ids"]]
    cand[0][0] = cand[2][0] = 12                               # 第 1 步、第 3 步的头号候选都是「本」
    fake = dict(trace, ids=[1, 2, 3, 10, 11, 12] + [20] * 9, cand_ids=cand)   # 生成的前三个字是一个词
    raw = SamplingExplorer(fake, itos)
    assert "".join(raw.tokens[3:6]) == "小日本"                 # 不给 clean_text：原样显示
    w = SamplingExplorer(fake, itos, clean_text=mask_offensive)
    assert w.tokens[3:6] == ["＊"] * 3                          # 跨三个 token 的词整个遮住
    assert w.tokens[:3] == raw.tokens[:3] and w.tokens[6:] == ["好"] * 9
    assert w.cand_tokens[0][0] == "本"                         # 第 1 步的前缀里没有「小日」：不遮
    assert w.cand_tokens[2][0] == "＊"                         # 第 3 步的前缀以「小日」结尾：接上「本」成词，遮住
    assert w.cand_tokens[1] == raw.cand_tokens[1]
    assert w.readout()["prefix"] == "".join(raw.tokens[:3])
    with pytest.raises(ValueError, match="等长"):
        SamplingExplorer(fake, itos, clean_text=lambda text: text[:-1])
