"""检查点 "bert-zh"：课程自己的中文 BERT，用第 12 章的掩码语言模型（MLM）配方预训练，训练得更久、读得更长。

语料与第 12 章相同：split_reviews(0) 的训练集评论 + 《人民日报》1998 年 1 月，按条（一条评论、《人民日报》的一行）随机留出 5% 不训练
（numpy default_rng(0)，与第 12 章的留出方式相同）；字表：特殊 token [PAD] [UNK] [CLS] [SEP] [MASK] + 训练文本里
最常见的 4,000 个字。与第 12 章不同的只有：每段最长 T_MAX = 128（[CLS] + 126 个字 + [SEP]，能读完整条评论），
按长度分桶成批，训练 STEPS 步，学习率线性预热再线性衰减。模型 d=128、2 层、4 个头、FFN 512（与第 14 章从零训练的
Transformer 分类器一样大：两者只差预训练）。meta 里记录留出集上被遮住位置的损失与准确率，以及一元字频基线的同一组数。
权重以 float16 存储（文件小一半）；记录的数字是用存储后的权重测的。

迁移曲线（第 14 章"预训练值不值"的证据）：预训练途中在 SNAPSHOTS 这几步（和第 0 步、最后一步）各留一份权重，
训练完后每一份都用 cls-bert 的配方（同样的轮数、学习率、种子 0、按验证集早停）微调成情感分类器，
记下验证、测试准确率与到那一步为止读过的字数——预训练读得越多，分类器好多少。
"""
from __future__ import annotations

import collections
import copy
import itertools
import math

import numpy as np
import torch
from torch.nn import functional as F

from ckpt_jobs._classifier import half_round      # 权重舍入到 float16（与分类器作业同一个函数）

NAME = "bert-zh"
NEEDS = ()

T_MAX, N_CHARS = 128, 4000
STEPS, BATCH, PEAK_LR, WARMUP = 20000, 32, 1e-3, 500      # 空闲的 2 核上约 0.1 秒一步：预训练约半小时
EVAL_EVERY, EVAL_SEQS = 1000, 300       # 验证曲线：每 1000 步在 300 段留出序列上量一次被遮位置的损失
SNAPSHOTS = (STEPS // 64, STEPS // 16, STEPS // 4)   # 迁移曲线的中间点（另有第 0 步与第 STEPS 步）
D_MODEL, N_LAYERS, N_HEADS, D_FF = 128, 2, 4, 512


def corpus():
    from tfcourse.data.people_daily import load_people_daily
    from tfcourse.data.reviews import split_reviews

    reviews = list(split_reviews(seed=0).train.texts)
    news = ["".join(words) for words in load_people_daily()]
    rng = np.random.default_rng(0)

    def hold_out(docs, frac=0.05):
        idx = rng.permutation(len(docs))
        n = int(len(docs) * frac)
        return [docs[i] for i in idx[n:]], [docs[i] for i in idx[:n]]

    rev_train, rev_held = hold_out(reviews)
    news_train, news_held = hold_out(news)
    train_docs = rev_train + news_train
    seen = set(train_docs)
    held_docs = [d for d in rev_held + news_held if d not in seen]
    return train_docs, held_docs, len(rev_train), len(news_train)


def to_sequences(docs, vocab):
    cls, sep = vocab.id("[CLS]"), vocab.id("[SEP]")
    seqs = []
    for doc in docs:
        ids = vocab.encode(doc)
        for s in range(0, len(ids), T_MAX - 2):
            piece = ids[s:s + T_MAX - 2]
            if len(piece) >= 4:
                seqs.append([cls] + piece + [sep])
    return seqs


@torch.no_grad()
def evaluate(model, seqs, vocab, seed=123, batch=200):
    from tfcourse.bert import IGNORE_INDEX, mask_tokens
    from tfcourse.classify import _pad

    model.eval()
    g = torch.Generator().manual_seed(seed)
    ys, nlls, guesses = [], [], []
    for s in range(0, len(seqs), batch):
        x, mask = _pad(seqs[s:s + batch], vocab.pad_id)
        inputs, labels = mask_tokens(x, vocab_size=len(vocab), mask_id=vocab.id("[MASK]"), special_ids=range(5),
                                     generator=g)
        chosen = labels != IGNORE_INDEX
        logp = model(inputs, attention_mask=mask)[chosen].log_softmax(-1)
        y = labels[chosen]
        ys.append(y)
        nlls.append(-logp.gather(1, y[:, None])[:, 0])
        guesses.append(logp.argmax(-1))
    return torch.cat(ys), torch.cat(nlls), torch.cat(guesses)


def build():
    from tfcourse.bert import IGNORE_INDEX, BertConfig, BertForMaskedLM, mask_tokens
    from tfcourse.classify import BERT_SPECIALS, LengthBuckets
    from tfcourse.tokenize.chars import CharVocab
    from tfcourse.train import fit, warmup_linear_lr

    train_docs, held_docs, n_rev, n_news = corpus()
    vocab = CharVocab.build(train_docs, N_CHARS, specials=BERT_SPECIALS)
    V = len(vocab)
    train_seqs, held_seqs = to_sequences(train_docs, vocab), to_sequences(held_docs, vocab)
    config = BertConfig(vocab_size=V, d_model=D_MODEL, n_layers=N_LAYERS, n_heads=N_HEADS, d_ff=D_FF,
                        max_len=T_MAX, dropout=0.0, pad_id=vocab.pad_id)
    torch.manual_seed(0)
    mlm = BertForMaskedLM(config)
    data = LengthBuckets(train_seqs, batch_size=BATCH, pad_id=vocab.pad_id)
    stream = (b for epoch in itertools.count() for b in data.epoch(epoch, seed=1))   # 一轮接一轮
    g_mask = torch.Generator().manual_seed(2)
    n_tokens = 0

    snaps = {0: (0, copy.deepcopy(mlm.state_dict()))}            # 步数 → (读过的字数, 权重)

    def loss_at(step):
        nonlocal n_tokens
        if step - 1 in SNAPSHOTS:                                        # 已经更新了 step - 1 次
            snaps[step - 1] = (n_tokens, copy.deepcopy(mlm.state_dict()))
        x, mask, _ = next(stream)
        inputs, labels = mask_tokens(x, vocab_size=V, mask_id=vocab.id("[MASK]"), special_ids=range(5),
                                     generator=g_mask)
        hidden = mlm.bert(inputs, attention_mask=mask)
        chosen = labels != IGNORE_INDEX
        n_tokens += int(mask.sum())
        return F.cross_entropy(mlm.head(hidden[chosen]), labels[chosen])

    curve_seqs = held_seqs[:EVAL_SEQS]

    def held_loss():
        _, nll, _ = evaluate(mlm, curve_seqs, vocab)                   # 固定种子的掩码：每次遮同样的位置
        return nll.mean().item()

    rec = fit(mlm, loss_at, steps=STEPS, lr_at=lambda s: warmup_linear_lr(s, PEAK_LR, WARMUP, STEPS),
              weight_decay=0.01, eval_fn=held_loss, eval_every=EVAL_EVERY, desc="预训练 bert-zh")
    losses, train_s = rec.losses, rec.seconds
    half_round(mlm)
    snaps[STEPS] = (n_tokens, copy.deepcopy(mlm.state_dict()))

    pick = np.random.default_rng(4).choice(len(held_seqs), min(1000, len(held_seqs)), replace=False)
    eval_seqs = [held_seqs[i] for i in pick]
    y, nll, guess = evaluate(mlm, eval_seqs, vocab)
    counts = collections.Counter("".join(train_docs))
    freq = torch.tensor([0.0] * 5 + [counts[c] for c in vocab.itos[5:]]) + 1
    freq[:5] = 0
    unigram = freq / freq.sum()
    top = int(unigram.argmax())
    state = {k: v.half() for k, v in mlm.state_dict().items() if k != "decoder.weight"}   # 输出层与词向量表绑定
    meta = {
        "config": {f: getattr(config, f) for f in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len",
                                                   "type_vocab_size", "dropout", "layer_norm_eps", "pad_id")},
        "vocab": vocab.to_meta(),
        "recipe": (f"第 12 章的 MLM 配方（15% 选中，80/10/10），评论训练集 {n_rev} 条 + 人民日报 {n_news} 句，"
                   f"T ≤ {T_MAX}，{STEPS} 步 × 每批 {BATCH} 段，AdamW 峰值学习率 {PEAK_LR}（预热 {WARMUP} 步后线性衰减），"
                   "float16 存储"),
        "steps": STEPS, "batch": BATCH, "train_sequences": len(train_seqs), "train_tokens_seen": n_tokens,
        "train_seconds": round(train_s, 1),
        "loss_curve": [round(float(np.mean(losses[i:i + 100])), 4) for i in range(0, len(losses), 100)],
        "val_curve": {"steps": rec.eval_steps, "held_out_loss": [round(v, 4) for v in rec.evals],
                      "sequences": len(curve_seqs)},
        "held_out": {
            "masked_positions": len(y),
            "bert_loss": round(nll.mean().item(), 4), "bert_accuracy": round((guess == y).float().mean().item(), 4),
            "unigram_loss": round(-unigram[y].log().mean().item(), 4),
            "unigram_top_accuracy": round((y == top).float().mean().item(), 4),
            "uniform_loss": round(math.log(V), 4),
        },
        "parameters": sum(p.numel() for p in mlm.parameters()),
    }
    print("   留出集：", meta["held_out"], flush=True)
    meta["transfer_curve"] = transfer_curve(config, vocab, snaps, eval_seqs)
    return state, meta


def transfer_curve(config, vocab, snaps, eval_seqs):
    """每份预训练快照：留出集上的被遮位置准确率，以及用 cls-bert 的配方（种子 0）微调出的分类器的验证 / 测试准确率。"""
    from tfcourse.bert import BertForMaskedLM, BertModel
    from tfcourse.classify import MAX_LEN, BertCharEncoder, BertClassifier, evaluate_logits, fine_tune

    from ckpt_jobs import cls_bert
    from ckpt_jobs._classifier import char_data, scores

    train, val, test = char_data(BertCharEncoder(vocab, MAX_LEN))
    curve = []
    for step, (tokens, weights) in sorted(snaps.items()):
        mlm = BertForMaskedLM(config)
        mlm.load_state_dict({k: v.half().float() for k, v in weights.items()})   # 与发布的权重一样取整到 float16
        y, _, guess = evaluate(mlm, eval_seqs, vocab)
        torch.manual_seed(0)                      # 与 cls-bert 的种子 0 完全相同的起点（最后一步那一份 = 它的种子 0）
        bert = BertModel(config.replace(dropout=cls_bert.DROPOUT))
        bert.load_state_dict(mlm.bert.state_dict())
        model = BertClassifier(bert, pool=cls_bert.POOL, dropout=cls_bert.DROPOUT)
        rec = fine_tune(model, train, epochs=cls_bert.EPOCHS, lr=cls_bert.LR, seed=0, val=val, keep_best=True,
                        progress=True, desc=f"迁移曲线：预训练 {step} 步")
        half_round(model)
        v, t = scores(evaluate_logits(model, val), val.labels), scores(evaluate_logits(model, test), test.labels)
        point = {"step": step, "tokens": tokens, "masked_accuracy": round((guess == y).float().mean().item(), 4),
                 "val_accuracy": v["accuracy"], "test_accuracy": t["accuracy"], "best_epoch": rec.best_epoch,
                 "val_accuracy_per_epoch": [round(a, 5) for a in rec.val_accuracy], "seconds": round(rec.seconds, 1)}
        print(f"   迁移曲线：预训练 {step} 步（{tokens:,} 字）→ 被遮位置准确率 {point['masked_accuracy']:.3f}，"
              f"分类验证 {v['accuracy']:.4f}、测试 {t['accuracy']:.4f}（第 {rec.best_epoch} 轮）", flush=True)
        curve.append(point)
    return curve
