"""gpt-zh-ctrl：把 gpt-zh 微调成按控制 token（<好评> / <差评>）写评论的生成器——LoRA 秩 1、4、16 与全量微调。

四种做法用同一份数据（训练集的每条评论前放上它标签对应的控制 token）、同样的步数、批大小与种子，
只是可训练的参数不同（学习率各按常见做法取：LoRA 大一些，全量微调小一些）。
检查点里只存各自训练出来的东西：LoRA 的 A、B（很小），全量微调的全部权重（存成 float16，
meta 里的数字都是在 float16 取整之后的模型上量的）。每种做法的用时、损失曲线、留出损失、
"控制 token 换成相反的"之后留出损失涨了多少（模型用没用上控制 token），以及内存账都记在 meta 里。
四种做法分给 2 个进程、每个进程 1 个线程训练（结果与核数无关）。
"""
from __future__ import annotations

import multiprocessing as mp

import torch

NAME = "gpt-zh-ctrl"
NEEDS = ("gpt-zh",)
GAP_EVERY, GAP_EXAMPLES = 150, 512       # 训练途中每 150 步在前 512 条验证样本上量一次"换成相反的控制 token 涨多少"


def _examples():
    from tfcourse import control
    from tfcourse.data.reviews import split_reviews

    splits = split_reviews(0)
    vocab = control.base_vocab()
    train = control.control_examples(vocab, splits.train.texts, splits.train.labels, control.FT_MAX_LEN)
    val = control.control_examples(vocab, splits.val.texts, splits.val.labels, control.FT_MAX_LEN)
    return train, val


def _train(name):
    from tfcourse import control

    torch.set_num_threads(1)
    train, val = _examples()
    torch.manual_seed(0)
    model = control.prepare_fine_tune(name)
    s = control.FINE_TUNE_SETTINGS[name]
    probe_x, probe_y = val[0][:GAP_EXAMPLES], val[1][:GAP_EXAMPLES]
    flipped = control.flip_control(probe_x)

    def control_gap():                    # 控制 token 换成相反的之后，留出损失涨多少：模型有多看重它
        return control.heldout_nll(model, flipped, probe_y) - control.heldout_nll(model, probe_x, probe_y)

    hist = control.fine_tune_lm(model, *train, steps=control.FT_STEPS, batch_size=control.FT_BATCH,
                                peak_lr=s["peak_lr"], warmup_steps=control.FT_WARMUP, seed=0,
                                progress=False, desc=name, eval_fn=control_gap, eval_every=GAP_EVERY)
    trained = control.trained_state(model, name)
    if name == "full":
        trained = {k: v.half() for k, v in trained.items()}
        control.load_trained_state(model, name, trained)            # 量的是取整之后的模型
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    n_total = sum(p.numel() for p in model.parameters())
    mem = control.training_memory(model, train[0][:control.FT_BATCH], train[1][:control.FT_BATCH])
    val_nll = control.heldout_nll(model, *val)
    run = {"settings": s, "trainable": n_train, "total": n_total, "seconds": round(hist["seconds"], 1),
           "loss_every10": [round(sum(hist["loss"][i:i + 10]) / 10, 4) for i in range(0, len(hist["loss"]), 10)],
           "val_nll": val_nll, "val_nll_flipped": control.heldout_nll(model, control.flip_control(val[0]), val[1]),
           "memory": mem, "gap_curve": {"steps": hist["eval_steps"], "gap": [round(g, 5) for g in hist["eval"]],
                                        "examples": GAP_EXAMPLES}}
    return name, {k: v.contiguous() for k, v in trained.items()}, run


def build():
    from tfcourse import control

    state, runs = {}, {}
    with mp.get_context("spawn").Pool(2) as pool:
        for name, trained, run in pool.imap(_train, control.FINE_TUNES):
            state.update({f"{name}.{k}": v for k, v in trained.items()})
            runs[name] = run
            print(f"   {name}：可训练 {run['trainable']:,} / {run['total']:,}，{run['seconds']:.0f} 秒，"
                  f"留出损失 {run['val_nll']:.3f}（控制 token 换成相反的：{run['val_nll_flipped']:.3f}），"
                  f"内存 {run['memory']['total'] / 1e6:.2f} MB", flush=True)
    train, val = _examples()
    meta = {"runs": runs, "steps": control.FT_STEPS, "batch_size": control.FT_BATCH, "warmup_steps": control.FT_WARMUP,
            "targets": list(control.LORA_TARGETS), "max_len": control.FT_MAX_LEN, "seed": 0, "threads_used": 1,
            "processes": 2, "train_examples": int(train[0].shape[0]), "val_examples": int(val[0].shape[0])}
    return state, meta
