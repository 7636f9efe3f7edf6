"""可控生成：在每条评论前放一个控制 token（<好评> / <差评>），把语言模型微调成"按要求写好评或差评"。第 15 章引入。

- `control_examples(vocab, texts, labels, max_len)`：训练样本 ⏎ <控制> 评论 ⏎ → 输入 ids 与答案 targets
  （控制 token 是给定的，不算损失；填充位置的答案记作 -100，也不算）；
- `fine_tune_lm(model, ids, targets, ...)`：只训练 requires_grad 的参数（全量微调或 LoRA 都用它），带进度条；
- `heldout_nll(model, ids, targets)`：留出样本上每个答案 token 的平均负对数似然；
- `generate_reviews(model, vocab, label, n, ...)`：以 ⏎ <控制> 开头抽样 n 条，截到下一个 ⏎；
- `text_nll(model, vocab, texts)`：在（未微调的）语言模型下给文本打分——流畅度（困惑度 = e 的这么多次方）；
- `training_memory(model, ids, targets)`：训练一步要占多少内存，从张量本身算出（见函数说明）；
- `prepare_fine_tune(name)` / `load_fine_tuned(name)`：四种微调做法（"r1"、"r4"、"r16" 是 LoRA 的秩，
  "full" 是全量微调）——刚装好、待训练的模型，与检查点 "gpt-zh-ctrl" 里训练好的模型。

字表约定与 `gpt.load_gpt_zh` 相同：0 号 ⏎ 是分隔符（也当填充），<好评>、<差评> 是字表里的两个特殊 token。
形状记号：N 样本数，L 每个样本的位置数，V 词表大小。
"""
from __future__ import annotations


import torch
from torch import nn

from ._checks import finite_number, positive_int

__all__ = ["CONTROL_TOKENS", "LABEL_NAMES", "IGNORE", "control_examples", "flip_control", "fine_tune_lm", "heldout_nll",
           "generate_reviews", "text_nll", "training_memory", "ControlTokenEmbedding", "LORA_TARGETS", "FINE_TUNES",
           "FINE_TUNE_SETTINGS", "base_vocab", "prepare_fine_tune", "trained_state", "load_trained_state",
           "load_fine_tuned"]

CONTROL_TOKENS = {1: "<好评>", 0: "<差评>"}
LABEL_NAMES = {1: "好评", 0: "差评"}
IGNORE = -100                       # cross_entropy 的 ignore_index：不算损失的位置
SEP = 0                             # ⏎：评论之间的分隔符，也当填充

# 第 15 章的四种微调（检查点 gpt-zh-ctrl 用的设置；章节里现场重跑一次时也用它们）
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "out_proj", "linear1", "linear2")   # 每层全部 6 个线性层
FINE_TUNES = ("r1", "r4", "r16", "full")
FINE_TUNE_SETTINGS = {
    "r1": {"r": 1, "alpha": 2.0, "peak_lr": 2e-2},
    "r4": {"r": 4, "alpha": 8.0, "peak_lr": 2e-2},
    "r16": {"r": 16, "alpha": 32.0, "peak_lr": 2e-2},
    "full": {"r": None, "alpha": None, "peak_lr": 3e-3},
}
FT_STEPS, FT_BATCH, FT_WARMUP, FT_MAX_LEN = 1500, 32, 75, 48


class ControlTokenEmbedding(nn.Module):
    """冻结的词向量表 + 只给几个 token（控制 token）的可训练增量：forward(ids) = base(ids) + delta[这几个 token]。

    增量从 0 开始（刚装上时什么都不改变），只有 len(token_ids) × d_model 个参数；
    `peft` 的 `trainable_token_indices` 做的是同一件事，只有一处不同：peft 连与词向量表共享权重的输出层一起改，
    这里只改输入这一侧，共享权重的输出层不受影响。"""

    def __init__(self, base: nn.Embedding, token_ids):
        super().__init__()
        self.base = base.requires_grad_(False)
        token_ids = torch.as_tensor(list(token_ids), dtype=torch.long)
        lookup = torch.full((base.num_embeddings,), -1, dtype=torch.long)
        lookup[token_ids] = torch.arange(len(token_ids))
        self.register_buffer("lookup", lookup, persistent=False)
        self.delta = nn.Parameter(torch.zeros(len(token_ids), base.embedding_dim))

    @property
    def weight(self) -> torch.Tensor:
        return self.base.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        idx = self.lookup[ids]                                  # (B, T)：-1 = 不是控制 token
        extra = self.delta[idx.clamp(min=0)] * (idx >= 0).unsqueeze(-1)
        return self.base(ids) + extra                           # (B, T, C)


def _check_label(label) -> int:
    if isinstance(label, bool) or label not in CONTROL_TOKENS:
        raise ValueError(f"label 应为 1（好评）或 0（差评），实际得到 {label!r}。")
    return int(label)


def control_examples(vocab, texts, labels, max_len: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """每条评论写成 ⏎ <控制> 评论 ⏎，截到 max_len + 1 个 token，右移一位得到 (输入, 答案)，都是 (N, L)。

    答案里 <控制> 那一位（由 ⏎ 预测控制 token）和填充位置记作 IGNORE：控制 token 是我们给的，不是要学着写的。
    L = min(max_len, 最长样本的长度)；短的样本在后面用 ⏎ 填充。"""
    max_len = positive_int(max_len, "max_len")
    texts, labels = list(texts), list(labels)
    if len(texts) != len(labels) or not texts:
        raise ValueError(f"texts 与 labels 应一样长且非空，实际为 {len(texts)} 条文本、{len(labels)} 个标签。")
    seqs = []
    for text, label in zip(texts, labels):
        ctrl = vocab.id(CONTROL_TOKENS[_check_label(label)])
        seqs.append(([SEP, ctrl] + vocab.encode(text) + [SEP])[:max_len + 1])
    L = max(len(s) for s in seqs) - 1
    ids = torch.full((len(seqs), L), SEP, dtype=torch.long)
    targets = torch.full((len(seqs), L), IGNORE, dtype=torch.long)
    for i, s in enumerate(seqs):
        n = len(s) - 1
        ids[i, :n] = torch.tensor(s[:-1])
        targets[i, :n] = torch.tensor(s[1:])
    targets[:, 0] = IGNORE                                     # ⏎ → <控制>：不学
    return ids, targets


def flip_control(ids: torch.Tensor) -> torch.Tensor:
    """把 control_examples 的输入里每条的控制 token 换成相反的（<好评> ↔ <差评>）：
    模型若真用上了控制 token，换过之后的留出损失应当更高。"""
    vocab = base_vocab()
    good, bad = vocab.id(CONTROL_TOKENS[1]), vocab.id(CONTROL_TOKENS[0])
    out = ids.clone()
    out[:, 1] = torch.where(ids[:, 1] == good, bad, good)
    return out


def _lm_loss(model, ids, targets) -> torch.Tensor:
    logits = model(ids)                                        # (N, L, V)
    return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


def fine_tune_lm(model, ids: torch.Tensor, targets: torch.Tensor, *, steps: int, batch_size: int,
                 peak_lr: float, warmup_steps: int = 0, weight_decay: float = 0.0, seed: int = 0,
                 total_steps: int | None = None, progress=True, desc: str = "微调", eval_fn=None,
                 eval_every: int = 0) -> dict:
    """在 (ids, targets) 上微调 model 里 requires_grad 的参数：每步随机取 batch_size 个样本。
    循环是第 10 章的 `train.fit`（AdamW + 线性预热 / 线性衰减 + 梯度裁剪 1.0）。
    返回 {"loss": 每步损失, "seconds": 用时, "trainable": 参数个数, "eval_steps": [...], "eval": [...]}。
    eval_fn()：每 eval_every 步（以及最后一步）调用一次，返回一个数（例如留出集上的某个损失），不计入用时。

    total_steps：学习率日程按这么多步排（默认 = steps）。只跑前 steps 步、日程按 total_steps 排，
    得到的就是一次完整训练的前 steps 步（同一种子、同样的批次）——章节里现场重跑一小段时用。"""
    from .train import fit, warmup_linear_lr

    steps, batch_size = positive_int(steps, "steps"), positive_int(batch_size, "batch_size")
    total = steps if total_steps is None else positive_int(total_steps, "total_steps")
    if total < steps:
        raise ValueError(f"total_steps 应 ≥ steps，实际 total_steps={total}、steps={steps}。")
    peak_lr = finite_number(peak_lr, "peak_lr")
    if ids.shape != targets.shape or ids.dim() != 2:
        raise ValueError(f"ids 与 targets 应为同形状的 (N, L)，实际为 {tuple(ids.shape)} 与 {tuple(targets.shape)}。")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("模型里没有可训练的参数（requires_grad 全为 False）。")
    gen = torch.Generator().manual_seed(int(seed))

    def loss_at(step):
        pick = torch.randint(0, ids.shape[0], (batch_size,), generator=gen)
        return _lm_loss(model, ids[pick], targets[pick])

    rec = fit(model, loss_at, steps=steps, lr_at=lambda s: warmup_linear_lr(s, peak_lr, warmup_steps, total),
              params=params, betas=(0.9, 0.95), weight_decay=weight_decay, progress=progress, desc=desc,
              eval_fn=eval_fn, eval_every=eval_every)
    model.eval()
    return {"loss": rec.losses, "seconds": rec.seconds, "trainable": sum(p.numel() for p in params),
            "eval_steps": rec.eval_steps, "eval": rec.evals}


@torch.no_grad()
def heldout_nll(model, ids: torch.Tensor, targets: torch.Tensor, batch_size: int = 256) -> float:
    """留出样本上每个答案 token（targets ≠ IGNORE）的平均负对数似然（奈特/token）。"""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for i in range(0, ids.shape[0], batch_size):
        logits = model(ids[i:i + batch_size])
        y = targets[i:i + batch_size]
        total += nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE,
                                             reduction="sum").item()
        count += int((y != IGNORE).sum())
    model.train(was_training)
    return total / count


def _cut(vocab, ids) -> str:
    ids = list(ids)
    if SEP in ids:
        ids = ids[:ids.index(SEP)]                             # 写到下一个 ⏎：这条评论结束
    return vocab.decode(ids)


@torch.no_grad()
def generate_reviews(model, vocab, label, n: int, *, max_new_tokens: int = 48, temperature: float = 1.0,
                     top_p: float | None = 0.9, seed: int = 0, guidance_scale: float = 1.0) -> list[str]:
    """以 ⏎ <控制> 开头抽样 n 条评论（label=None：只给 ⏎，不加控制），每条截到下一个 ⏎。种子决定结果。

    字表外的 □ 和两个控制 token 从不写出（`gpt.generate` 的 suppress_ids）：□ 不是一个字，
    控制 token 只该出现在开头、由我们给出。
    guidance_scale > 1：无分类器引导，反面提示是相反的控制 token（见 `gpt.generate`）；1 = 不引导。"""
    from .gpt import generate

    n = positive_int(n, "n")
    prompt = [SEP] if label is None else [SEP, vocab.id(CONTROL_TOKENS[_check_label(label)])]
    ids = torch.tensor([prompt] * n)
    never = [vocab.unk_id] + [vocab.id(t) for t in CONTROL_TOKENS.values()]
    negative = None
    if guidance_scale != 1.0:
        if label is None:
            raise ValueError("guidance_scale ≠ 1 要有一个要求（label 为 1 或 0）：引导是远离相反的那个控制 token。")
        negative = torch.tensor([[SEP, vocab.id(CONTROL_TOKENS[1 - int(label)])]] * n)
    out = generate(model, ids, max_new_tokens, temperature=temperature, top_p=top_p,
                   generator=torch.Generator().manual_seed(int(seed)), suppress_ids=never,
                   guidance_scale=guidance_scale, negative_prompt_ids=negative)
    return [_cut(vocab, row[len(prompt):].tolist()) for row in out]


@torch.no_grad()
def text_nll(model, vocab, texts, max_len: int | None = None) -> float:
    """语言模型给 ⏎ 文本 ⏎ 打分：文本的每个字和结尾的 ⏎（"该结束了"）的平均负对数似然（奈特/token）。

    第 15 章用未微调的 gpt-zh 给生成的评论打分（流畅度）：它没见过控制 token，只按"像不像评论"打分。"""
    texts = list(texts)
    if not texts:
        raise ValueError("texts 不能为空。")
    max_len = model.config.max_len if max_len is None else positive_int(max_len, "max_len")
    seqs = [([SEP] + vocab.encode(t) + [SEP])[:max_len + 1] for t in texts]
    L = max(len(s) for s in seqs) - 1
    ids = torch.full((len(seqs), L), SEP, dtype=torch.long)
    targets = torch.full((len(seqs), L), IGNORE, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s) - 1] = torch.tensor(s[:-1])
        targets[i, :len(s) - 1] = torch.tensor(s[1:])
    return heldout_nll(model, ids, targets)


def training_memory(model, ids: torch.Tensor, targets: torch.Tensor) -> dict:
    """训练一步（一个批次 ids, targets，AdamW）要占的内存（字节）。在 model 的一份拷贝上真的走一步，
    再数这一步留下的张量，所以与 CPU / GPU、与内存分配器无关：

    - weights：全部参数（共享的只算一次）；
    - grads：反向传播之后各参数 .grad 的字节数（冻结的参数没有梯度）；
    - optimizer：AdamW 走一步之后的状态（每个可训练参数一阶、二阶矩各一份，外加步数）；
    - activations：前向时为反向传播保存下来的张量（torch.autograd.graph.saved_tensors_hooks 数出来；
      同一块存储只算一次，参数本身不算）。
    total 是四项之和，是一步训练内存峰值的一个略偏高的估计：四项并不都在同一时刻存在（梯度在反向传播中
    才逐个生成，保存的激活随之逐个释放），计算过程中转瞬即逝的临时张量也没算。"""
    import copy

    model = copy.deepcopy(model)
    params = list(model.parameters())
    param_ptrs = {p.untyped_storage().data_ptr() for p in params}
    trainable = [p for p in params if p.requires_grad]
    if not trainable:
        raise ValueError("模型里没有可训练的参数（requires_grad 全为 False）。")
    saved: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in param_ptrs:
            saved[st.data_ptr()] = st.nbytes()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = _lm_loss(model, ids, targets)
    loss.backward()
    opt = torch.optim.AdamW(trainable, lr=1e-3)
    opt.step()
    nbytes = lambda t: t.numel() * t.element_size()               # noqa: E731
    out = {"weights": sum(nbytes(p) for p in params),
           "grads": sum(nbytes(p.grad) for p in params if p.grad is not None),
           "optimizer": sum(nbytes(v) for st in opt.state.values() for v in st.values()
                            if isinstance(v, torch.Tensor)),
           "activations": sum(saved.values())}
    out["total"] = sum(out.values())
    return out


_VOCAB = None


def base_vocab():
    """gpt-zh 的字表（只读一次）。"""
    global _VOCAB
    if _VOCAB is None:
        from .gpt import load_gpt_zh
        _VOCAB = load_gpt_zh()[1]
    return _VOCAB


def _check_name(name) -> str:
    if name not in FINE_TUNE_SETTINGS:
        raise ValueError(f"微调做法应为 {list(FINE_TUNES)} 之一，实际得到 {name!r}。")
    return name


def prepare_fine_tune(name: str):
    """载入 gpt-zh，按做法 name 准备好待训练的模型：LoRA 给每层的 6 个线性层装上秩 r 的适配器，
    再放开两个控制 token 的词向量（`ControlTokenEmbedding`，其余参数冻结）；"full" 全部参数可训练。
    适配器的 A 用当前的 torch 随机状态初始化（先设种子）。"""
    from .gpt import load_gpt_zh
    from .lora import add_lora

    s = FINE_TUNE_SETTINGS[_check_name(name)]
    model = load_gpt_zh()[0]
    if s["r"] is not None:
        add_lora(model, s["r"], s["alpha"], LORA_TARGETS)
        vocab = base_vocab()
        model.tok_emb = ControlTokenEmbedding(model.tok_emb, [vocab.id(t) for t in CONTROL_TOKENS.values()])
    return model


def trained_state(model, name: str) -> dict:
    """name 这种做法训练出来的张量：LoRA 是各层的 lora_A、lora_B 与控制 token 的词向量增量；
    全量微调是全部权重（共享的输出层不重复存）。"""
    if _check_name(name) == "full":
        return {k: v.detach().clone() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    return {k: p.detach().clone() for k, p in model.named_parameters() if k.endswith(("lora_A", "lora_B", "tok_emb.delta"))}


@torch.no_grad()
def load_trained_state(model, name: str, state: dict):
    """把 trained_state 存下的张量放回 prepare_fine_tune(name) 得到的模型（按参数的 dtype 转换）。返回 model。"""
    _check_name(name)
    params = dict(model.named_parameters())
    if name == "full":
        params = {k: v for k, v in model.state_dict().items()}
    missing = sorted(set(state) - set(params))
    if missing:
        raise ValueError(f"模型里没有这些张量：{missing[:3]}…（做法 {name!r} 的检查点与模型不配套）。")
    for k, v in state.items():
        params[k].copy_(v.to(params[k].dtype))
    return model


def load_fine_tuned(name: str):
    """检查点 "gpt-zh-ctrl" 里用做法 name 训练好的模型（eval 模式）；训练记录在 model.meta。"""
    from . import checkpoints

    state, meta = checkpoints.load("gpt-zh-ctrl")
    prefix = f"{_check_name(name)}."
    model = prepare_fine_tune(name)
    load_trained_state(model, name, {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)})
    model.meta = dict(meta["runs"][name], steps=meta["steps"], batch_size=meta["batch_size"])
    return model.eval()
