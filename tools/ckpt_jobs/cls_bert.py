"""检查点 "cls-bert"：课程自己的中文 BERT（检查点 bert-zh）在 split_reviews(0) 的训练集上整体微调，3 个种子。

输入：[CLS] + 前 126 个字 + [SEP]（bert-zh 的字表），按长度分桶成批。模型：bert-zh 的全部权重（dropout 0.1）
+ 真实 token 上平均池化 + 线性分类头（MLM 没有训练过 [CLS] 的表示，所以取平均）；所有参数都训练。
AdamW，峰值学习率 3e-4，前 10% 的步线性预热再线性衰减，每批 64 条。发布验证集准确率最高的种子（float16）。
与 cls-transformer 同样大小（d=128、2 层、4 个头），差别只在起点：预训练的权重，还是随机初始化。
"""
from __future__ import annotations

from ckpt_jobs._classifier import EPOCHS       # 三个字级分类器训练同样多的轮数

NAME = "cls-bert"
NEEDS = ("bert-zh",)
LR = 3e-4
POOL, DROPOUT = "mean", 0.1


def build():
    from tfcourse.bert import BertModel
    from tfcourse.classify import MAX_LEN, BertCharEncoder, BertClassifier, load_bert_zh

    from ckpt_jobs._classifier import char_data, run_seeds

    pretrained, vocab = load_bert_zh()
    config = pretrained.config.replace(dropout=DROPOUT)
    encoder = BertCharEncoder(vocab, MAX_LEN)
    train, val, test = char_data(encoder)

    def make(seed):
        bert = BertModel(config)
        bert.load_state_dict(pretrained.state_dict())
        return BertClassifier(bert, pool=POOL, dropout=DROPOUT)

    state, meta = run_seeds(make, train, val, test, epochs=EPOCHS, lr=LR, desc=NAME)
    bert_cfg = {f: getattr(config, f) for f in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len",
                                                "type_vocab_size", "dropout", "layer_norm_eps", "pad_id")}
    meta.update(arch="bert", config={"bert": bert_cfg, "pool": POOL, "dropout": DROPOUT, "freeze_layers": 0},
                vocab=vocab.to_meta(), max_len=MAX_LEN,
                recipe=f"预训练 + 微调：bert-zh 全部参数微调，T ≤ {MAX_LEN}，{EPOCHS} 轮，AdamW 峰值 {LR}，3 个种子")
    return state, meta
