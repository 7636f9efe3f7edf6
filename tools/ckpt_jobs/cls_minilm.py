"""检查点 "cls-minilm"：对照组——英文的 all-MiniLM-L6-v2 和它的英文 WordPiece 词表，在同一份中文数据上微调。

MiniLM 每个 token 的计算量约是课程小模型的 20 倍，3 个种子的整体微调放不进 `make checkpoints` 的预算，所以：
- 每条评论取前 T ≤ 64 个 WordPiece token（[CLS] … [SEP]）；
- 词向量和下面 FROZEN 层冻结：它们对每条评论只前向一次（no_grad），输出缓存起来，3 个种子共用；
- 训练最上面一层的自注意力子层和两个 LayerNorm，加上分类头（真实 token 上平均池化 → 线性层）；
  这一层的前馈网络也冻结（它有 118 万个参数，存下来要 2.4 MB）。
检查点只存训练过的参数（float16）；其余权重来自课程包里的 MiniLM 文件（load_minilm，SHA-256 核对过），
`load_classifier("cls-minilm")` 把两者拼起来。AdamW，峰值学习率 5e-4（前 10% 的步线性预热再线性衰减），1 轮，每批 64 条，发布验证集准确率最高的种子。
meta["test_subset"]：测试集里固定的 TEST_SUBSET 条（numpy default_rng(0) 抽取）上的准确率，测试用它快速复测。
"""
from __future__ import annotations

import numpy as np

NAME = "cls-minilm"
NEEDS = ()
MAX_TOKENS, FROZEN, EPOCHS, LR = 64, 5, 1, 5e-4
POOL, DROPOUT = "mean", 0.1
TEST_SUBSET = 400


def trained_names(model) -> set[str]:
    return {k for k, p in model.named_parameters() if p.requires_grad}


def build():
    import torch

    from tfcourse.bert import load_minilm
    from tfcourse.classify import BertClassifier, LengthBuckets, WordPieceEncoder, evaluate_logits
    from tfcourse.data.reviews import split_reviews

    from ckpt_jobs._classifier import cache_lower, half_round, run_seeds, scores

    base, wp = load_minilm()
    encoder = WordPieceEncoder(wp, MAX_TOKENS)
    sp = split_reviews(0)
    parts = [[encoder.encode(t) for t in part.texts] for part in (sp.train, sp.val, sp.test)]
    unk = sum(i == wp.unk_id for seqs in parts for s in seqs for i in s[1:-1])
    total = sum(len(s) - 2 for seqs in parts for s in seqs)

    def freeze(model):
        model.bert.layers[FROZEN].ffn.requires_grad_(False)   # 顶层的前馈网络也冻结
        return model

    lower = freeze(BertClassifier(base, pool=POOL, dropout=DROPOUT, freeze_layers=FROZEN)).eval()
    cached = [cache_lower(lower, seqs, encoder.pad_id, batch_size=128)   # 冻结部分：每条评论只前向一次
              for seqs in parts]
    train, val, test = (LengthBuckets(c, part.labels, batch_size=64) for c, part in
                        zip(cached, (sp.train, sp.val, sp.test)))
    original = {k: v.clone() for k, v in base.state_dict().items()}

    def make(seed):
        base.load_state_dict(original)                         # 每个种子都从同一份 MiniLM 权重出发
        model = freeze(BertClassifier(base, pool=POOL, dropout=DROPOUT, freeze_layers=FROZEN))
        return model

    state, meta = run_seeds(make, train, val, test, epochs=EPOCHS, lr=LR, desc=NAME,
                            forward=lambda m: m.forward_upper, trained_state=trained_names)

    # 发布的模型在固定的测试子集上、从 token id 开始完整前向的准确率（测试复测用）
    model = make(meta["shipped_seed"])
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    pick = np.sort(np.random.default_rng(0).choice(len(sp.test), TEST_SUBSET, replace=False))
    sub = LengthBuckets([parts[2][i] for i in pick], [sp.test.labels[i] for i in pick], batch_size=64,
                        pad_id=encoder.pad_id)
    sub_scores = scores(evaluate_logits(model, sub), sub.labels)
    meta.update(arch="bert-minilm", max_len=MAX_TOKENS,
                config={"pool": POOL, "dropout": DROPOUT, "freeze_layers": FROZEN, "frozen_top_ffn": True},
                trained=sorted(state), unk_share=round(unk / total, 4),
                test_subset={"indices_rng": "numpy default_rng(0).choice(len(test), %d, replace=False)" % TEST_SUBSET,
                             "n": TEST_SUBSET, **sub_scores},
                recipe=(f"对照组：英文 MiniLM + 英文 WordPiece（中文字里 {unk / total:.1%} 成了 [UNK]），T ≤ {MAX_TOKENS}，"
                        f"词向量与下面 {FROZEN} 层冻结（输出只算一次），只微调第 6 层的自注意力、LayerNorm 与分类头，"
                        f"{EPOCHS} 轮，AdamW 峰值 {LR}，3 个种子"))
    return state, meta
