"""检查点 "cls-gru"：字级 GRU 分类器（上一套课程的模型），在 split_reviews(0) 的训练集上训练 3 个种子。

字表：训练集评论里最常见的 4,000 个字 + [PAD] + [UNK]；每条评论读前 128 个字，按长度分桶成批（每批补齐到
这一批最长的评论）。词向量 128 维、GRU 隐藏状态 128 维，取最后一个真实字的隐藏状态分类。
AdamW，峰值学习率 2e-3，前 10% 的步线性预热再线性衰减，每批 64 条。发布验证集准确率最高的种子（float16）。
"""
from __future__ import annotations

from ckpt_jobs._classifier import EPOCHS       # 三个字级分类器训练同样多的轮数

NAME = "cls-gru"
NEEDS = ()
LR = 2e-3
CONFIG = dict(d_model=128, d_hidden=128, dropout=0.1)


def build():
    from tfcourse.classify import MAX_LEN, CharEncoder, GRUClassifier
    from tfcourse.data.reviews import split_reviews
    from tfcourse.tokenize.chars import CharVocab

    from ckpt_jobs._classifier import char_data, run_seeds

    vocab = CharVocab.build(split_reviews(0).train.texts, 4000)
    encoder = CharEncoder(vocab, MAX_LEN)
    train, val, test = char_data(encoder)
    config = dict(CONFIG, vocab_size=len(vocab), pad_id=vocab.pad_id, n_classes=2)
    state, meta = run_seeds(lambda seed: GRUClassifier(**config), train, val, test, epochs=EPOCHS, lr=LR,
                            desc=NAME)
    meta.update(arch="gru", config=config, vocab=vocab.to_meta(), max_len=MAX_LEN,
                recipe=f"从零训练：字级 GRU，T ≤ {MAX_LEN}，{EPOCHS} 轮，AdamW 峰值 {LR}，3 个种子")
    return state, meta
