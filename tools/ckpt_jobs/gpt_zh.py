"""gpt-zh：第 13 章的 GPT（字级，训练集最常见的 4,000 个字 + 4 个特殊 token），在训练集的评论上训练 8,000 步。

步数由验证曲线定：4,000 步时验证损失还在明显下降；8,000 步时最后 1,000 步只降了 0.04 奈特/字
（第 13 章 4.2 节打印这一降幅），曲线已经很平。

字表与 bert-zh 和第 14 章的分类器一样大：它盖住留出评论里 99.8% 以上的字，□ 很少出现。
训练时 dropout 0.1（存下的 config 里是 0：第 15 章从它出发微调、第 16 章量化时都是推理模式），
每 EVAL_EVERY 步在验证集的前 32,768 个字上量一次损失，发布验证损失最低的那一步的权重（验证曲线记在 meta 里），
以 float16 存储（meta 里的数字都是取整之后量的）。

特殊 token：0 号 ⏎（评论之间的分隔符，也当填充），1 号 □（字表之外的字），
2、3 号 <好评>、<差评>：第 15 章的控制 token。预训练从不出现这两个，只先在词表里留好位置
（预训练时它们只作为"不会出现的下一个字"被压低概率），第 15 章微调时才学会它们的意思。
meta 里记录训练设置、验证/测试集上的困惑度，以及同一字表上的一元、二元计数基线（第 13 章的做法）。
线程数由 tools/checkpoints.py 固定（2 个；同一台机器上重跑得到同样的权重），记在 meta 的 threads_used 里。
"""
from __future__ import annotations

import copy
import math

import numpy as np
import torch

NAME = "gpt-zh"
NEEDS = ()

SPECIALS = ("⏎", "□", "<好评>", "<差评>")
N_CHARS = 4000
CONFIG = dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, max_len=64, dropout=0.0)
TRAIN_DROPOUT = 0.1
STEPS, BATCH, BLOCK, PEAK_LR, WARMUP, SEED = 8000, 32, 64, 5e-3, 400, 0
EVAL_EVERY, EVAL_TOKENS = 200, 32768
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
    from tfcourse.gpt import GPT, GPTConfig

    return train_char_lm(lambda **kw: GPT(GPTConfig(**kw)), CONFIG)


def train_char_lm(make_model, config: dict, label: str = "GPT"):
    """在评论语料上训练一个字级语言模型（gpt-zh 与 gpt-zh-llama 共用：同字表、同步数、同批大小、同学习率）。
    make_model(vocab_size=…, **config) 建模型；返回 (state, meta)。"""
    from tfcourse.data.reviews import split_reviews
    from tfcourse.gpt import encode_reviews, mean_nll, train_lm
    from tfcourse.tokenize import CharVocab

    torch.manual_seed(SEED)
    splits = split_reviews(0)
    vocab = CharVocab.build(splits.train.texts, N_CHARS, specials=SPECIALS)
    train_ids, val_ids, test_ids = (encode_reviews(vocab, s.texts)
                                    for s in (splits.train, splits.val, splits.test))
    model = make_model(vocab_size=len(vocab), **dict(config, dropout=TRAIN_DROPOUT))
    val_small = val_ids[:EVAL_TOKENS + 1]
    best = {"nll": float("inf"), "step": 0, "state": None}

    def val_loss():
        nll = mean_nll(model, val_small, BLOCK)
        if nll < best["nll"]:
            best.update(nll=nll, state=copy.deepcopy(model.state_dict()))
        return nll

    hist = train_lm(model, train_ids, steps=STEPS, batch_size=BATCH, block=BLOCK, peak_lr=PEAK_LR,
                    warmup_steps=WARMUP, seed=SEED, progress=True, eval_every=EVAL_EVERY, eval_fn=val_loss)
    for s, v in zip(hist["eval_steps"], hist["eval"]):
        print(f"   第 {s} 步：验证集前 {EVAL_TOKENS} 字 {v:.4f} 奈特/字", flush=True)
    best["step"] = hist["eval_steps"][int(np.argmin(hist["eval"]))]
    model = make_model(vocab_size=len(vocab), **config)               # 存下的 config：dropout 0
    model.load_state_dict({k: v.half().float() for k, v in best["state"].items()})   # 存成 float16：量的是取整之后的模型
    model.eval()
    val_nll, test_nll = mean_nll(model, val_ids, BLOCK), mean_nll(model, test_ids, BLOCK)
    base = _baselines(train_ids, val_ids, test_ids, len(vocab), skip={vocab.id(t) for t in SPECIALS[2:]})
    meta = {
        "config": {"vocab_size": len(vocab), **config},
        "vocab": vocab.to_meta(),
        "control_tokens": {"1": "<好评>", "0": "<差评>"},
        "train": {"steps": STEPS, "batch_size": BATCH, "block": BLOCK, "peak_lr": PEAK_LR,
                  "warmup_steps": WARMUP, "seed": SEED, "weight_decay": 0.1, "dropout": TRAIN_DROPOUT,
                  "best_step": best["step"], "eval_tokens": EVAL_TOKENS,
                  "tokens_seen": STEPS * BATCH * BLOCK, "train_tokens": int(train_ids.numel()),
                  "seconds": round(hist["seconds"], 1), "threads_used": torch.get_num_threads(),
                  "eval_steps": hist["eval_steps"], "eval_val_nll": [round(v, 4) for v in hist["eval"]],
                  "final_train_loss_mean50": round(float(np.mean(hist["loss"][-50:])), 4)},
        "val_nll": val_nll, "test_nll": test_nll,
        "val_ppl": math.exp(val_nll), "test_ppl": math.exp(test_nll),
        "baselines": base, "storage": "float16",
    }
    print(f"   {label}：验证 {meta['val_ppl']:.1f}，测试 {meta['test_ppl']:.1f}；二元基线：验证 "
          f"{base['bigram_val_ppl']:.1f}，测试 {base['bigram_test_ppl']:.1f}（k = {base['bigram_k']}）", flush=True)
    # 与词向量表共享的输出层不存两份；float16 存储（上面的数字就是取整之后量的）
    state = {k: v.half() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    return state, meta
