"""tfcourse.control（第 15 章）：控制样本的格式、只训练可训练参数的微调循环、内存账，
以及检查点 gpt-zh-ctrl 重新载入后仍达到记录的留出损失、仍按要求写好评 / 差评。"""
import copy

import numpy as np
import pytest
import torch

from tfcourse import control
from tfcourse.data.reviews import split_reviews
from tfcourse.gpt import GPT, GPTConfig
from tfcourse.lora import LoRALinear, add_lora
from tfcourse.tokenize import CharVocab

SPECIALS = ("⏎", "□", "<好评>", "<差评>")


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """小模型：1 个线程更快，也不随核数变。"""


@pytest.fixture(scope="module")
def tiny():
    vocab = CharVocab.build(["这本书很好看", "酒店很差，不推荐", "好评", "差评"], 30, specials=SPECIALS)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=len(vocab), d_model=32, n_heads=2, n_layers=2, d_ff=64, max_len=24)).eval()
    return model, vocab


def test_control_examples_format(tiny):
    _, vocab = tiny
    x, y = control.control_examples(vocab, ["很好", "不推荐这家酒店"], [1, 0], max_len=6)
    assert x.shape == y.shape == (2, 6)
    good, bad = vocab.id("<好评>"), vocab.id("<差评>")
    assert x[0].tolist() == [0, good, vocab.id("很"), vocab.id("好"), 0, 0]       # 短的用 ⏎ 填充
    assert y[0].tolist() == [-100, vocab.id("很"), vocab.id("好"), 0, -100, -100]  # 结尾的 ⏎ 要学，填充不学
    assert x[1, 1] == bad and y[1, 0] == -100 and (y[1] != -100).sum() == 5       # 截断：没有结尾的 ⏎
    assert torch.equal(x[:, 1:], torch.where(y[:, :-1] == -100, x[:, 1:], y[:, :-1]))   # 错开一位
    with pytest.raises(ValueError, match="label"):
        control.control_examples(vocab, ["好"], [2])
    with pytest.raises(ValueError, match="一样长"):
        control.control_examples(vocab, ["好", "差"], [1])


def test_fine_tune_trains_only_the_adapters_and_total_steps_gives_a_prefix(tiny):
    model, vocab = tiny
    x, y = control.control_examples(vocab, ["这本书很好看", "酒店很差，不推荐"] * 4, [1, 0] * 4, max_len=12)

    def run(steps, total):
        torch.manual_seed(1)
        m = add_lora(copy.deepcopy(model), 2, 4.0, control.LORA_TARGETS)
        frozen = {k: v.clone() for k, v in m.state_dict().items() if "lora_" not in k}
        h = control.fine_tune_lm(m, x, y, steps=steps, batch_size=4, peak_lr=2e-2, warmup_steps=2,
                                 total_steps=total, progress=False)
        assert all(torch.equal(v, m.state_dict()[k]) for k, v in frozen.items())   # 底座一点没变
        return m, h

    m, h = run(30, None)
    assert np.mean(h["loss"][-5:]) < np.mean(h["loss"][:5]) - 0.3
    assert h["trainable"] == sum(p.numel() for p in m.parameters() if p.requires_grad)
    _, short = run(5, 30)
    np.testing.assert_allclose(short["loss"], h["loss"][:5], rtol=1e-4)
    with pytest.raises(ValueError, match="total_steps"):
        control.fine_tune_lm(m, x, y, steps=5, batch_size=2, peak_lr=1e-3, total_steps=3, progress=False)
    with pytest.raises(ValueError, match="可训练"):
        control.fine_tune_lm(copy.deepcopy(model).requires_grad_(False), x, y, steps=1, batch_size=2,
                             peak_lr=1e-3, progress=False)


def test_training_memory_counts_the_tensors_of_one_step(tiny):
    model, vocab = tiny
    x, y = control.control_examples(vocab, ["这本书很好看", "酒店很差，不推荐"] * 2, [1, 0] * 2, max_len=12)
    full = control.training_memory(model, x, y)
    n = sum(p.numel() for p in model.parameters())
    assert full["weights"] == full["grads"] == 4 * n                   # float32；共享的输出层只算一次
    assert 8 * n <= full["optimizer"] < 8 * n + 1000                   # AdamW 两份矩，加上每个参数的步数
    assert all(p.grad is None for p in model.parameters())             # 量的是拷贝，原模型没动
    lora = add_lora(copy.deepcopy(model), 1, 2.0, control.LORA_TARGETS)
    small = control.training_memory(lora, x, y)
    k = sum(p.numel() for p in lora.parameters() if p.requires_grad)
    assert small["grads"] == 4 * k and small["weights"] == 4 * (n + k)
    assert 0.5 * full["activations"] < small["activations"] < 1.5 * full["activations"]
    assert small["total"] == sum(v for key, v in small.items() if key != "total")
    bigger = control.training_memory(model, torch.cat([x, x]), torch.cat([y, y]))
    assert bigger["activations"] > 1.6 * full["activations"]           # 激活值随批大小增长


def test_generate_reviews_is_seeded_and_stops_at_the_separator(tiny):
    model, vocab = tiny
    a = control.generate_reviews(model, vocab, 1, 5, max_new_tokens=10, seed=3)
    assert a == control.generate_reviews(model, vocab, 1, 5, max_new_tokens=10, seed=3)
    assert len(a) == 5 and all(isinstance(t, str) and "⏎" not in t for t in a)
    assert len(control.generate_reviews(model, vocab, None, 2, max_new_tokens=4)) == 2
    with pytest.raises(ValueError, match="label"):
        control.generate_reviews(model, vocab, "好评", 2)


# ---------- 检查点：gpt-zh-ctrl ----------

@pytest.fixture(scope="module")
def val():
    s = split_reviews(0)
    return control.control_examples(control.base_vocab(), s.val.texts, s.val.labels, control.FT_MAX_LEN)


@pytest.fixture(scope="module")
def base_val_nll(val):
    from tfcourse.gpt import load_gpt_zh

    return control.heldout_nll(load_gpt_zh()[0], *val)


@pytest.mark.parametrize("name", control.FINE_TUNES)
def test_fine_tuned_checkpoints_reach_their_recorded_heldout_loss(name, val, base_val_nll):
    model = control.load_fine_tuned(name)
    nll = control.heldout_nll(model, *val)
    assert abs(nll - model.meta["val_nll"]) < 0.005
    assert nll < base_val_nll - 0.01                  # 比没微调的基座在同一批验证样本上的损失低
    lora = [m for m in model.modules() if isinstance(m, LoRALinear)]
    assert (len(lora) == 0) == (name == "full")
    assert model.meta["trainable"] == sum(p.numel() for p in model.parameters() if p.requires_grad)
    gap = control.heldout_nll(model, control.flip_control(val[0]), val[1]) - nll
    assert gap > 0.003                              # 控制 token 换成相反的，损失变高：模型在看它


def test_fine_tuned_model_writes_the_requested_sentiment():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    s = split_reviews(0)
    judge = make_pipeline(TfidfVectorizer(analyzer="char", ngram_range=(1, 2), sublinear_tf=True),
                          LogisticRegression(C=4.0, max_iter=1000)).fit(s.train.texts, s.train.labels)
    model, vocab = control.load_fine_tuned("full"), control.base_vocab()
    rate = {}
    for g in (1.0, 2.0):
        hits = []
        for label, seed in ((1, 101), (0, 202)):
            texts = control.generate_reviews(model, vocab, label, 64, max_new_tokens=46, seed=seed, guidance_scale=g)
            assert not any(ch in t for t in texts for ch in ("□", "<好评>", "<差评>"))
            hits += list((judge.predict_proba(texts)[:, 1] >= 0.5) == label)
        rate[g] = np.mean(hits)
    assert rate[1.0] > 0.6                          # 不加控制时正好一半（记录时约 0.7：控制有效但不强）
    assert rate[2.0] > max(0.85, rate[1.0] + 0.1)   # 无分类器引导 γ = 2：记录时约 0.94
    with pytest.raises(ValueError, match="label"):
        control.generate_reviews(model, vocab, None, 2, guidance_scale=2.0)
    with pytest.raises(ValueError, match="微调做法"):
        control.load_fine_tuned("r8")


def test_control_token_embedding_starts_as_the_base_and_learns_only_its_rows():
    base = torch.nn.Embedding(10, 4)
    emb = control.ControlTokenEmbedding(base, [2, 3])
    ids = torch.tensor([[0, 2, 5, 3]])
    assert torch.equal(emb(ids), base(ids)) and emb.weight is base.weight
    assert [n for n, p in emb.named_parameters() if p.requires_grad] == ["delta"]
    emb(ids).pow(2).sum().backward()
    assert emb.delta.grad.abs().sum(dim=1).gt(0).all()              # 两行都有梯度
    with torch.no_grad():
        emb.delta[0] += 1.0
    out = emb(ids)
    assert torch.equal(out[0, [0, 2, 3]], base(ids)[0, [0, 2, 3]])   # 别的 token 不变
    assert torch.allclose(out[0, 1], base.weight[2] + 1.0)
