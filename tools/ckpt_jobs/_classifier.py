"""第 14 章分类器作业共用的部分：同一份划分、每个种子训练一次、按验证集挑要发布的种子。

预算：三个字级分类器（GRU、Transformer、BERT）都训练 EPOCHS 轮、按验证集早停（留下验证准确率最高的那一轮），
3 个种子（0、1、2）；MiniLM 对照组只训练 1 轮（英文词表读不了大多数汉字，第 14 章量了这一项；多训几轮的收益没有量）。
在空闲的 2 核上，字级分类器每轮约 45 秒。
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

SEEDS = (0, 1, 2)
EPOCHS = 4                # 字级分类器的轮数（验证曲线见各检查点 meta 的 val_accuracy_per_epoch）


def load() -> str:
    return "、".join(f"{x:.2f}" for x in os.getloadavg())


def half_round(module) -> None:
    """权重按 float16 存储：先把训练好的权重舍入到 float16，记录的数字就是存储后的模型测出来的。"""
    with torch.no_grad():
        for p in module.parameters():
            if p.requires_grad:
                p.copy_(p.half().float())


def scores(logits: torch.Tensor, labels: torch.Tensor) -> dict:
    pred = logits.argmax(dim=-1)
    tp = int(((pred == 1) & (labels == 1)).sum())
    fp = int(((pred == 1) & (labels == 0)).sum())
    fn = int(((pred == 0) & (labels == 1)).sum())
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return {"accuracy": round(float((pred == labels).float().mean()), 5), "f1": round(f1, 5)}


def run_seeds(make_model, train, val, test, *, epochs: int, lr: float, desc: str, forward=None,
              trained_state=None, seeds=SEEDS) -> tuple[dict, dict]:
    """每个种子：建模型（make_model(seed)）→ fine_tune（按验证集早停：留下验证准确率最高的那一轮）
    → 舍入到 float16 → 验证集、测试集上测。

    返回 (验证集准确率最高的那个种子的 state_dict（float16，只含训练过的参数）, meta 片段)。
    测试集只用来报告，从不用来挑选。"""
    from tfcourse.classify import evaluate_logits, fine_tune

    runs, best = [], None
    for seed in seeds:
        torch.manual_seed(seed)
        model = make_model(seed)
        fwd = forward(model) if forward else None
        load_before = load()
        rec = fine_tune(model, train, epochs=epochs, lr=lr, seed=seed, val=val, forward=fwd, progress=True,
                        desc=f"{desc} 种子 {seed}", keep_best=True)
        half_round(model)
        v = scores(evaluate_logits(model, val, fwd), val.labels)
        t = scores(evaluate_logits(model, test, fwd), test.labels)
        run = {"seed": seed, "val_accuracy": v["accuracy"], "test_accuracy": t["accuracy"], "test_f1": t["f1"],
               "train_seconds": round(rec.seconds, 1), "trained_parameters": rec.trained_parameters,
               "val_accuracy_per_epoch": [round(a, 5) for a in rec.val_accuracy], "best_epoch": rec.best_epoch,
               "loss_per_epoch": rec.as_meta()["loss_per_epoch"], "steps": rec.steps,
               "load_average": f"{load_before} → {load()}"}
        print(f"   {desc} 种子 {seed}：验证 {v['accuracy']:.4f}，测试 {t['accuracy']:.4f}，F1 {t['f1']:.4f}，"
              f"{rec.seconds:.0f} 秒（负载 {run['load_average']}）", flush=True)
        runs.append(run)
        if best is None or v["accuracy"] > best[0]:
            names = trained_state(model) if trained_state else None
            state = {k: p.detach().half().clone() for k, p in model.state_dict().items()
                     if names is None or k in names}
            best = (v["accuracy"], seed, state)
    test_acc = [r["test_accuracy"] for r in runs]
    meta = {"split": "split_reviews(0)", "n_train": len(train.items), "n_val": len(val.items),
            "n_test": len(test.items), "epochs": epochs, "lr": lr, "batch_size": train.batch_size,
            "seeds": runs, "shipped_seed": best[1], "selection": "验证集准确率最高的种子（测试集只用来报告）",
            "shipped": next(r for r in runs if r["seed"] == best[1]),
            "test_accuracy_mean": round(float(np.mean(test_acc)), 5),
            "test_accuracy_std": round(float(np.std(test_acc, ddof=1)), 5) if len(runs) > 1 else 0.0,
            "storage": "float16"}
    return best[2], meta


def cache_lower(model, seqs, pad_id: int, batch_size: int) -> list:
    """冻结部分（词向量与下面几层，`model.encode_lower`）对每条序列只前向一次：返回每条的 (T_i, C) 隐藏状态，
    按原顺序排好（按长度分桶只为省时间）。"""
    from tfcourse.classify import LengthBuckets

    data = LengthBuckets(seqs, batch_size=batch_size, pad_id=pad_id)
    out, pos = [None] * len(seqs), 0
    for x, mask, _ in data.in_order():
        h = model.encode_lower(x, mask)                        # (B, T, C)
        for j in range(len(x)):
            out[data.order[pos + j]] = h[j, :int(mask[j].sum())].clone()
        pos += len(x)
    return out


def char_data(encoder, batch_size=64):
    from tfcourse.classify import LengthBuckets
    from tfcourse.data.reviews import split_reviews

    sp = split_reviews(0)
    return tuple(LengthBuckets([encoder.encode(t) for t in part.texts], part.labels, batch_size=batch_size,
                               pad_id=encoder.pad_id) for part in (sp.train, sp.val, sp.test))
