"""检查点 "cls-curve"：标注越少，预训练越值钱吗？课程自己的中文 BERT 在 n 条标注上微调，
与同一个网络从随机初始化训练，比较测试准确率（第 14 章 6.2 节的曲线；e5 与 TF-IDF 的曲线在 e5-probe 里）。

- 标注：训练集里分层抽 n 条（`data.reviews.labelled_subset(labels, n, seed)`，n ∈ SIZES，种子 0、1、2；
  种子同时决定抽哪 n 条、随机初始化（从零训练时）、dropout 和批的顺序）。验证集、测试集都是完整的。
- 两个模型结构完全相同（bert-zh 的配置：d = 128、2 层、4 个头，平均池化 + 线性分类头，dropout 0.1），
  分类器就是 cls-bert 的那一个；差别只在起点：bert-zh 预训练好的权重，还是 BERT 的随机初始化 N(0, 0.02²)。
- 配方（两个模型相同）：每批 BATCH 条，一"轮"至少过 ROUND 条（n 小时把这 n 条重复几遍），共 ROUNDS 轮；
  AdamW，前 10% 的步预热再线性衰减；每轮结束在验证集上测一次，留下最好的一轮（早停）。
  学习率在验证集上从 LRS 里挑：只用种子 0 挑（每个学习率各训练一次），种子 1、2 沿用挑中的那个。
- 全部训练集（12,155 条）：预训练的那一行就是发布的 cls-bert（它的 3 个种子，记录在 cls-bert 的 meta 里）；
  从零训练的一行用 cls-bert 的配方（EPOCHS 轮、每批 64 条、峰值学习率 cls_bert.LR）训练 3 个种子。
检查点里只有一个记录数组（test_accuracy[模型, n, 种子]），曲线的全部细节在 meta["curve"] 里。
"""
from __future__ import annotations

import math
import time

import numpy as np

NAME = "cls-curve"
NEEDS = ("bert-zh", "cls-bert")
SIZES = (100, 300, 1000, 3000)
SEEDS = (0, 1, 2)
LRS = (1e-4, 3e-4, 1e-3)
ROUND, ROUNDS, BATCH = 1000, 6, 32
MODELS = ("bert-zh", "scratch")


def setup():
    """共用的部分：bert-zh、字表编码器、完整的训练 / 验证 / 测试集。"""
    from tfcourse.classify import MAX_LEN, BertCharEncoder, load_bert_zh
    from tfcourse.data.reviews import split_reviews

    from ckpt_jobs import cls_bert
    from ckpt_jobs._classifier import char_data

    pretrained, vocab = load_bert_zh()
    encoder = BertCharEncoder(vocab, MAX_LEN)
    train_all, val, test = char_data(encoder)
    sp = split_reviews(0)
    return {"pretrained": pretrained, "config": pretrained.config.replace(dropout=cls_bert.DROPOUT),
            "encoder": encoder, "train_all": train_all, "val": val, "test": test,
            "seqs": [encoder.encode(t) for t in sp.train.texts], "y": np.asarray(sp.train.labels)}


def make(env, kind, seed):
    """同一个网络：kind = "bert-zh" 从预训练的权重出发，"scratch" 用 BERT 的随机初始化 N(0, 0.02²)。"""
    import torch

    from tfcourse.bert import BertModel
    from tfcourse.classify import BertClassifier

    from ckpt_jobs import cls_bert

    if kind not in MODELS:
        raise ValueError(f"kind 应为 {MODELS} 之一，实际为 {kind!r}。")
    torch.manual_seed(seed)
    bert = BertModel(env["config"])
    if kind == "bert-zh":
        bert.load_state_dict(env["pretrained"].state_dict())
    return BertClassifier(bert, pool=cls_bert.POOL, dropout=cls_bert.DROPOUT)


def train_point(env, kind, n, seed, lr, progress=True):
    """曲线上的一个点：n 条分层抽样的标注（种子 seed）上按本作业的配方微调，返回记录（dict）。"""
    from tfcourse.classify import LengthBuckets, evaluate_logits, fine_tune
    from tfcourse.data.reviews import labelled_subset

    from ckpt_jobs._classifier import half_round, load, scores

    y, val, test = env["y"], env["val"], env["test"]
    idx = labelled_subset(y, n, seed)
    repeat = math.ceil(ROUND / len(idx))               # 一轮至少 ROUND 条：小的子集重复几遍
    items = [env["seqs"][i] for i in idx] * repeat
    labels = [int(y[i]) for i in idx] * repeat
    data = LengthBuckets(items, labels, batch_size=BATCH, pad_id=env["encoder"].pad_id)
    model = make(env, kind, seed)
    before = load()
    rec = fine_tune(model, data, epochs=ROUNDS, lr=lr, seed=seed, val=val, keep_best=True, progress=progress,
                    desc=f"{kind} n={n} 种子 {seed} lr={lr:g}")
    half_round(model)
    v, t = scores(evaluate_logits(model, val), val.labels), scores(evaluate_logits(model, test), test.labels)
    return {"model": kind, "n": len(idx), "seed": seed, "lr": lr, "repeat": repeat,
            "val_accuracy": v["accuracy"], "test_accuracy": t["accuracy"], "best_round": rec.best_epoch,
            "val_accuracy_per_round": [round(a, 5) for a in rec.val_accuracy], "steps": rec.steps,
            "seconds": round(rec.seconds, 1), "load_average": f"{before} → {load()}"}


def build():
    import torch

    from tfcourse import checkpoints
    from tfcourse.classify import evaluate_logits, fine_tune

    from ckpt_jobs import cls_bert
    from ckpt_jobs._classifier import EPOCHS, half_round, load, scores

    env = setup()
    y, val, test, train_all = env["y"], env["val"], env["test"], env["train_all"]

    def run(kind, n, seed, lr):
        return train_point(env, kind, n, seed, lr)

    curve = []
    for kind in MODELS:
        for n in SIZES:
            tried = {lr: run(kind, n, 0, lr) for lr in LRS}          # 学习率：只用种子 0 在验证集上挑
            lr = max(LRS, key=lambda r: (tried[r]["val_accuracy"], -r))
            points = [dict(tried[lr], lr_search={f"{r:g}": tried[r]["val_accuracy"] for r in LRS})]
            points += [run(kind, n, seed, lr) for seed in SEEDS[1:]]
            for p in points:
                print(f"   {kind} n = {p['n']:>5} 种子 {p['seed']}：学习率 {p['lr']:g}，验证 {p['val_accuracy']:.4f}，"
                      f"测试 {p['test_accuracy']:.4f}（{p['seconds']:.0f} 秒，负载 {p['load_average']}）", flush=True)
            curve += points

    # 全部训练集：预训练的一行 = 发布的 cls-bert（记录）；从零训练的一行用同一个配方现训 3 个种子
    cls_meta = checkpoints.load("cls-bert")[1]
    for r in cls_meta["seeds"]:
        curve.append({"model": "bert-zh", "n": len(y), "seed": r["seed"], "lr": cls_meta["lr"],
                      "val_accuracy": r["val_accuracy"], "test_accuracy": r["test_accuracy"],
                      "best_round": r["best_epoch"], "seconds": r["train_seconds"], "source": "cls-bert"})
    for seed in SEEDS:
        model = make(env, "scratch", seed)
        before = load()
        rec = fine_tune(model, train_all, epochs=EPOCHS, lr=cls_bert.LR, seed=seed, val=val, keep_best=True,
                        progress=True, desc=f"scratch 全部 种子 {seed}")
        half_round(model)
        v, t = scores(evaluate_logits(model, val), val.labels), scores(evaluate_logits(model, test), test.labels)
        p = {"model": "scratch", "n": len(y), "seed": seed, "lr": cls_bert.LR, "val_accuracy": v["accuracy"],
             "test_accuracy": t["accuracy"], "best_round": rec.best_epoch, "seconds": round(rec.seconds, 1),
             "val_accuracy_per_round": [round(a, 5) for a in rec.val_accuracy], "steps": rec.steps,
             "load_average": f"{before} → {load()}", "source": "cls-bert 的配方"}
        print(f"   scratch 全部 种子 {seed}：验证 {p['val_accuracy']:.4f}，测试 {p['test_accuracy']:.4f}"
              f"（{p['seconds']:.0f} 秒）", flush=True)
        curve.append(p)

    sizes = list(SIZES) + [len(y)]
    table = np.zeros((len(MODELS), len(sizes), len(SEEDS)), dtype=np.float32)
    for p in curve:
        table[MODELS.index(p["model"]), sizes.index(p["n"]) if p["n"] in sizes else
              min(range(len(sizes)), key=lambda i: abs(sizes[i] - p["n"])), SEEDS.index(p["seed"])] = p["test_accuracy"]
    meta = {"split": "split_reviews(0)", "n_train": len(y), "n_val": len(val.items), "n_test": len(test.items),
            "models": list(MODELS), "sizes": list(SIZES), "seeds": list(SEEDS), "lr_grid": list(LRS),
            "round_examples": ROUND, "rounds": ROUNDS, "batch_size": BATCH, "curve": curve,
            "subset_rule": "data.reviews.labelled_subset(train.labels, n, seed)",
            "full_recipe": {"epochs": EPOCHS, "lr": cls_bert.LR, "batch_size": train_all.batch_size},
            "pretraining": {"tokens": checkpoints.load("bert-zh")[1]["train_tokens_seen"]},
            "recipe": (f"bert-zh 与同结构的随机初始化，在 n 条分层抽样的标注上微调：每批 {BATCH} 条，"
                       f"{ROUNDS} 轮 × 每轮至少 {ROUND} 条，学习率用种子 0 在验证集上从 "
                       f"{'、'.join(f'{r:g}' for r in LRS)} 里挑，按验证集早停")}
    return {"test_accuracy": torch.from_numpy(table)}, meta
