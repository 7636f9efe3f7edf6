"""gpt-zh：第 13 章的 GPT（字级，1000 个字 + 4 个特殊 token），在训练集的评论上训练得更久。

特殊 token：0 号 ⏎（评论之间的分隔符，也当填充），1 号 □（字表之外的字），
2、3 号 <好评>、<差评>：第 15 章的控制 token。预训练从不出现这两个，只先在词表里留好位置
（预训练时它们只作为"不会出现的下一个字"被压低概率），第 15 章微调时才学会它们的意思。
meta 里记录训练设置、验证/测试集上的困惑度，以及同一字表上的一元、二元计数基线（第 13 章的做法）。
单线程训练：机器忙时单线程最快，结果也与核数无关（meta 的 threads_used）。
"""
from __future__ import annotations

import math

import numpy as np
import torch

NAME = "gpt-zh"
NEEDS = ()

SPECIALS = ("⏎", "□", "<好评>", "<差评>")
N_CHARS = 1000
CONFIG = dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, max_len=64, dropout=0.0)
STEPS, BATCH, BLOCK, PEAK_LR, WARMUP, SEED = 800, 32, 64, 1e-2, 80, 0
K_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def _baselines(train_ids, val_ids, test_ids, V, skip):
    """一元（加一平滑）与二元（加 k 平滑，k 在验证集上挑）基线；skip：从不出现的控制 token，不参与平滑。"""
    keep = np.array([i for i in range(V) if i not in skip])
    remap = -np.ones(V, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    tr, va, te = (remap[x.numpy()] for x in (train_ids, val_ids, test_ids))
    n = len(keep)
    pairs = np.zeros((n, n))
    np.add.at(pairs, (tr[:-1], tr[1:]), 1)
    uni = np.bincount(tr, minlength=n) + 1.0
    uni /= uni.sum()

    def bigram(ids, k):
        probs = (pairs + k) / (pairs + k).sum(axis=1, keepdims=True)
        return float(-np.log(probs[ids[:-1], ids[1:]]).mean())

    val = {k: bigram(va, k) for k in K_GRID}
    best = min(val, key=val.get)
    return {"vocab_size": n, "bigram_k": best,
            "bigram_val_nll": val[best], "bigram_test_nll": bigram(te, best),
            "bigram_val_ppl": math.exp(val[best]), "bigram_test_ppl": math.exp(bigram(te, best)),
            "unigram_val_ppl": math.exp(float(-np.log(uni[va[1:]]).mean())),
            "unigram_test_ppl": math.exp(float(-np.log(uni[te[1:]]).mean()))}


def build():
    from tfcourse.data.reviews import split_reviews
    from tfcourse.gpt import GPT, GPTConfig, encode_reviews, mean_nll, train_lm
    from tfcourse.tokenize import CharVocab

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    splits = split_reviews(0)
    vocab = CharVocab.build(splits.train.texts, N_CHARS, specials=SPECIALS)
    train_ids, val_ids, test_ids = (encode_reviews(vocab, s.texts)
                                    for s in (splits.train, splits.val, splits.test))
    config = GPTConfig(vocab_size=len(vocab), **CONFIG)
    model = GPT(config)
    val_small = val_ids[:8193]
    hist = train_lm(model, train_ids, steps=STEPS, batch_size=BATCH, block=BLOCK, peak_lr=PEAK_LR,
                    warmup_steps=WARMUP, seed=SEED, progress=False, eval_every=100,
                    eval_fn=lambda: mean_nll(model, val_small, BLOCK))
    for s, v in zip(hist["eval_steps"], hist["eval"]):
        print(f"   第 {s} 步：验证集前 8192 字 {v:.3f} 奈特/字", flush=True)
    val_nll, test_nll = mean_nll(model, val_ids, BLOCK), mean_nll(model, test_ids, BLOCK)
    base = _baselines(train_ids, val_ids, test_ids, len(vocab), skip={vocab.id(t) for t in SPECIALS[2:]})
    meta = {
        "config": {"vocab_size": len(vocab), **CONFIG},
        "vocab": vocab.to_meta(),
        "control_tokens": {"1": "<好评>", "0": "<差评>"},
        "train": {"steps": STEPS, "batch_size": BATCH, "block": BLOCK, "peak_lr": PEAK_LR,
                  "warmup_steps": WARMUP, "seed": SEED, "weight_decay": 0.1,
                  "tokens_seen": STEPS * BATCH * BLOCK, "train_tokens": int(train_ids.numel()),
                  "seconds": round(hist["seconds"], 1), "threads_used": 1,
                  "eval_steps": hist["eval_steps"], "eval_val8192_nll": [round(v, 4) for v in hist["eval"]],
                  "final_train_loss_mean50": round(float(np.mean(hist["loss"][-50:])), 4)},
        "val_nll": val_nll, "test_nll": test_nll,
        "val_ppl": math.exp(val_nll), "test_ppl": math.exp(test_nll),
        "baselines": base,
    }
    print(f"   GPT：验证 {meta['val_ppl']:.1f}，测试 {meta['test_ppl']:.1f}；二元基线：验证 "
          f"{base['bigram_val_ppl']:.1f}，测试 {base['bigram_test_ppl']:.1f}（k = {base['bigram_k']}）", flush=True)
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}   # 与词向量表共享，不存两份
    return state, meta
