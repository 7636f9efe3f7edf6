"""检查点 "cls-transformer"：从零训练的字级 Transformer 分类器，split_reviews(0) 的训练集，3 个种子。

字表同 cls-gru（训练集最常见的 4,000 个字 + [PAD] + [UNK]），T ≤ 128，按长度分桶成批。d=128、2 个 pre-LN
编码器层（GELU）、4 个头、FFN 512，真实 token 上平均池化后分类——与 bert-zh 一样大，只是没有预训练。
AdamW，峰值学习率 1e-3，前 10% 的步线性预热再线性衰减，每批 64 条。发布验证集准确率最高的种子（float16）。
"""
from __future__ import annotations

from ckpt_jobs._classifier import EPOCHS       # 三个字级分类器训练同样多的轮数

NAME = "cls-transformer"
NEEDS = ()
LR = 1e-3
CONFIG = dict(d_model=128, n_heads=4, n_layers=2, d_ff=512, dropout=0.1, pool="mean")


def build():
    from tfcourse.classify import MAX_LEN, CharEncoder, TransformerClassifier
    from tfcourse.data.reviews import split_reviews
    from tfcourse.tokenize.chars import CharVocab

    from ckpt_jobs._classifier import char_data, run_seeds

    vocab = CharVocab.build(split_reviews(0).train.texts, 4000)
    encoder = CharEncoder(vocab, MAX_LEN)
    train, val, test = char_data(encoder)
    config = dict(CONFIG, vocab_size=len(vocab), max_len=MAX_LEN, pad_id=vocab.pad_id, n_classes=2)
    state, meta = run_seeds(lambda seed: TransformerClassifier(**config), train, val, test, epochs=EPOCHS, lr=LR,
                            desc=NAME)
    meta.update(arch="transformer", config=config, vocab=vocab.to_meta(), max_len=MAX_LEN,
                recipe=f"从零训练：字级 Transformer（2 层 pre-LN），T ≤ {MAX_LEN}，{EPOCHS} 轮，AdamW 峰值 {LR}，3 个种子")
    return state, meta
