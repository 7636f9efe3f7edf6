"""GPT：只有解码器（decoder-only）的自回归语言模型。第 13 章引入。

- `GPTConfig`：冻结的 dataclass，预设 `GPT_TINY`（测试用）、`GPT_SMALL`（第 13 章训练的尺寸）；
- `GPT(config)`：词向量 + 可学习的位置向量 → n_layers 个 pre-LN 的 `EncoderLayer`（GELU，带因果掩码）
  → 末尾 LayerNorm → 输出层（与词向量表共享权重）。`model(ids)` 给出每个位置对下一个 token 的 logits；
- `generate(model, prompt_ids, max_new_tokens, ...)`：一个一个地往后写，支持贪心、温度、top-k、top-p
  （见 `tfcourse.sampling`），默认用 KV 缓存（`attention.KVCache`）；
- `train_lm(model, ids, ...)`：在一条长的 token 序列上随机取窗口训练（下一个 token 的交叉熵），带进度条；
  `mean_nll(model, ids, block)`：留出序列上每个 token 的平均负对数似然（困惑度 = e 的这么多次方）；
- `encode_reviews(vocab, texts)`：每条评论前放一个分隔符（0 号），接成一条长序列；
- `load_gpt_zh()`：随课程包发布的检查点 "gpt-zh"（第 13 章的模型训练得更久，第 15、16 章用）→ (GPT, CharVocab)。

"解码器"在这里没有交叉注意力：它就是编码器层加上因果掩码，所以直接用 `layers.EncoderLayer`。
形状记号：B 批，T 位置数，C = d_model，V 词表大小，P 已缓存的位置数。
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ._checks import ModelConfig, describe_shape, finite_number, positive_int
from .attention import KVCache, causal_mask
from .layers import EncoderLayer
from .positional import LearnedPositionalEmbedding
from .sampling import check_temperature, check_top_k, check_top_p, guide_logits, sample_next

__all__ = ["GPTConfig", "GPT_TINY", "GPT_SMALL", "PRESETS", "GPT", "generate", "train_lm", "mean_nll",
           "encode_reviews", "load_gpt_zh"]


@dataclass(frozen=True)
class GPTConfig(ModelConfig):
    """GPT 的超参数。max_len：最多能处理的位置数（可学习的位置向量只有这么多）。"""

    vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 512
    max_len: int = 128
    dropout: float = 0.0

    POSITIVE = ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len")

    def __post_init__(self):
        self.check_common()


GPT_TINY = GPTConfig(vocab_size=50, d_model=32, n_heads=2, n_layers=2, d_ff=64, max_len=64)
GPT_SMALL = GPTConfig(vocab_size=4002, d_model=64, n_heads=4, n_layers=2, d_ff=256, max_len=64)   # 4000 个字 + 2
PRESETS = {"tiny": GPT_TINY, "small": GPT_SMALL}


class GPT(nn.Module):
    """只有解码器的语言模型：forward(ids (B, T)) → logits (B, T, V)，位置 t 的 logits 只依赖 ids[:, :t+1]。"""

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise ValueError(f"config 应为 GPTConfig，实际得到 {type(config).__name__}。")
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = LearnedPositionalEmbedding(c.max_len, c.d_model)
        self.drop = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, norm_first=True, activation="gelu")
            for _ in range(c.n_layers))
        self.norm = nn.LayerNorm(c.d_model)                    # pre-LN 的栈末尾必须再归一化一次
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight              # 输出层与词向量表共享权重
        # 因果掩码只建一次（max_len × max_len 的下三角），每次前向切出需要的那一块
        self.register_buffer("causal", causal_mask(c.max_len), persistent=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """初始化：线性层取自 N(0, 0.02²)（GPT-2 的做法），偏置为 0，LayerNorm 为 (1, 0)；
        词向量表（也是输出层）取自 N(0, 1/d_model)，让初始的 logits 标准差约为 1。

        GPT-2 的词向量也用 0.02，那是对 d_model = 768 而言；小模型照搬时初始 logits 的标准差只有 0.02·√d_model（d_model = 64 时 0.16），
        共享权重的输出层要花很多步才"长大"，训练明显变慢（第 13 章的小模型上实测过）。"""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.normal_(self.tok_emb.weight, std=self.config.d_model ** -0.5)

    def new_cache(self) -> KVCache:
        """一份空的 KV 缓存（每层一个）。"""
        return KVCache(len(self.layers))

    def _check_ids(self, ids, start: int) -> None:
        check_ids(ids, start, self.config.vocab_size, self.config.max_len,
                  f"可学习的位置向量只有 {self.config.max_len} 个")

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None, last_only: bool = False) -> torch.Tensor:
        """ids (B, T) → logits (B, T, V)。cache：可选的 KVCache，这 T 个位置接在已缓存的 P 个之后。

        last_only=True：只给最后一个位置算输出层，返回 (B, 1, V)（生成时只需要它）。"""
        P = 0 if cache is None else cache.length
        self._check_ids(ids, P)
        T = ids.shape[1]
        x = self.tok_emb(ids) + self.pos_emb.weight[P:P + T]   # (B, T, C)：位置从 P 数起
        x = self.drop(x)
        # 位置 P + t 只能看 0…P + t：(T, P + T) 的下三角；只写一个新位置时它能看全部，不用掩码
        mask = None if T == 1 else self.causal[P:P + T, :P + T]
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, cache=None if cache is None else cache[i])
        if last_only:
            x = x[:, -1:]                                      # (B, 1, C)
        return self.lm_head(self.norm(x))                      # (B, T, V)


@torch.no_grad()
def generate(model: GPT, prompt_ids, max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None,
             generator: torch.Generator | None = None, use_cache: bool = True,
             suppress_ids=None, guidance_scale: float = 1.0, negative_prompt_ids=None) -> torch.Tensor:
    """自回归生成：接着 prompt_ids (B, T0) 再写 max_new_tokens 个，返回 (B, T0 + max_new_tokens)。

    每一步取最后一个位置的 logits，按 温度 → top-k → top-p 处理后抽样（见 sampling.sample_next）；
    temperature = 0 是贪心（取 argmax，忽略 top_k、top_p）。use_cache=True 时每步只算新的那一个位置，
    旧位置的键、值从 KV 缓存里取；False 时每步把整个序列重算一遍（结果相同，慢）。
    suppress_ids：永远不写的 token（例如字表之外的 □），它们的打分先设成 −∞
    （与 `transformers` 的 `suppress_tokens` 相同）。一维的 prompt_ids 当作 B = 1。

    guidance_scale、negative_prompt_ids：无分类器引导（classifier-free guidance；`transformers` 里同名的两个参数）。
    每一步除了在 prompt_ids 之后算对数概率 c，还在"反面提示"negative_prompt_ids（与 prompt_ids 同形状，
    后面接着同样的已生成 token）之后算一遍 u，用 u + guidance_scale·(c − u) 代替 c（`sampling.guide_logits`），
    再做温度、top-k、top-p。guidance_scale = 1 就是不引导；越大，越远离反面提示所说的方向。
    """
    _check_lm(model)
    ids = torch.as_tensor(prompt_ids)
    if ids.dim() == 1:
        ids = ids[None]                                        # (T0,) -> (1, T0)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens 应为 ≥ 0 的整数，实际为 {max_new_tokens!r}。")
    check_temperature(temperature)
    if top_k is not None:
        check_top_k(top_k)
    if top_p is not None:
        check_top_p(top_p)
    model._check_ids(ids, 0)
    suppress = _check_suppress(suppress_ids, model.config.vocab_size)
    guidance_scale = finite_number(guidance_scale, "guidance_scale")
    B = ids.shape[0]
    if negative_prompt_ids is not None:
        neg = torch.as_tensor(negative_prompt_ids)
        neg = neg[None] if neg.dim() == 1 else neg
        if neg.shape != ids.shape:
            raise ValueError(f"negative_prompt_ids 应与 prompt_ids 同形状 {tuple(ids.shape)}，"
                             f"实际为 {tuple(neg.shape)}。")
        model._check_ids(neg, 0)
        ids = torch.cat([ids, neg])                            # (2B, T0)：前 B 行正面，后 B 行反面
    elif guidance_scale != 1.0:
        raise ValueError(f"guidance_scale={guidance_scale} 需要同时给出 negative_prompt_ids（反面提示）。")
    total, max_len = ids.shape[1] + max_new_tokens, model.config.max_len
    if total > max_len:
        raise ValueError(
            f"提示 {ids.shape[1]} 个 token 加上要生成的 {max_new_tokens} 个共 {total} 个位置，"
            f"超过了模型的 max_len={max_len}。")
    was_training = model.training
    model.eval()
    try:
        cache = model.new_cache() if use_cache else None
        step_in = ids                                          # 这一步要送进模型的位置
        for _ in range(max_new_tokens):
            logits = model(step_in if use_cache else ids, cache, last_only=True)[:, -1]   # (B, V)
            if negative_prompt_ids is not None:                # 引导：u + γ(c − u)，(B, V)
                logits = guide_logits(logits[:B], logits[B:], guidance_scale)
            if suppress is not None:
                logits[:, suppress] = float("-inf")
            nxt = sample_next(logits, temperature, top_k, top_p, generator)  # (B,)
            if negative_prompt_ids is not None:
                nxt = torch.cat([nxt, nxt])                    # 反面的那几行接着写同样的 token
            ids = torch.cat([ids, nxt[:, None]], dim=1)        # (B, T + 1)
            step_in = nxt[:, None]                             # 有缓存时下一步只送这一个
    finally:
        model.train(was_training)
    return ids[:B]


def check_ids(ids, start: int, vocab_size: int, max_len: int, why: str = "") -> None:
    """语言模型的输入检查（GPT 与附录 A 的 LlamaGPT 共用）：(B, T) 的整数张量、T ≥ 1、id 在词表之内、
    已缓存的 start 个位置加上这 T 个不超过 max_len。why：超长时补一句原因。"""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"ids 应为 (B, T) 的整数 torch.Tensor，实际为 {describe_shape(ids)}。")
    if ids.shape[1] == 0:
        raise ValueError("ids 至少要有 1 个位置（T ≥ 1）。")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(
            f"ids 应在词表范围 0…{vocab_size - 1} 之内，实际最小 {int(ids.min())}、最大 {int(ids.max())}。")
    if start + ids.shape[1] > max_len:
        raise ValueError(
            f"位置数超过 max_len={max_len}：已缓存 {start} 个、这次又给了 {ids.shape[1]} 个，"
            f"共 {start + ids.shape[1]} 个" + (f"，{why}。" if why else "。"))


def _check_lm(model) -> None:
    """generate、train_lm 接受的模型：本章的 GPT，或附录 A 的 LlamaGPT（同样的接口：ids、cache、last_only）。"""
    from .llama import LlamaGPT

    if not isinstance(model, (GPT, LlamaGPT)):
        raise ValueError(f"model 应为 tfcourse.gpt.GPT 或 tfcourse.llama.LlamaGPT，实际得到 {type(model).__name__}。")


def _check_suppress(suppress_ids, V: int) -> torch.Tensor | None:
    """suppress_ids → 一维的 id 张量（None 或空 → None）；每个 id 都要在 0…V−1 之内。"""
    if suppress_ids is None:
        return None
    try:
        ids = torch.as_tensor(list(suppress_ids), dtype=torch.long)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"suppress_ids 应为一串 token id（例如 [vocab.unk_id]），实际得到 {suppress_ids!r}。") from None
    if ids.numel() == 0:
        return None
    if int(ids.min()) < 0 or int(ids.max()) >= V:
        raise ValueError(f"suppress_ids 里的 id 应在 0…{V - 1} 之内，实际得到 {ids.tolist()}。")
    return ids


def _check_stream(ids, block: int, name: str) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name} 应为一维的整数 torch.Tensor（整段语料的 token id），实际为 {describe_shape(ids)}。")
    if ids.numel() < block + 1:
        raise ValueError(f"{name} 至少要有 block + 1 = {block + 1} 个 token，实际只有 {ids.numel()} 个。")
    return ids


def train_lm(model: GPT, ids: torch.Tensor, *, steps: int, batch_size: int, block: int, peak_lr: float,
             warmup_steps: int = 0, weight_decay: float = 0.1, seed: int = 0, progress=True,
             eval_fn=None, eval_every: int = 0, desc: str = "训练 GPT",
             num_threads: int | None = None) -> dict:
    """语言模型的训练：每步从 ids 里随机取 batch_size 个长 block + 1 的窗口，
    输入前 block 个、预测后 block 个（整体右移一位）。循环本身是第 10 章的 `train.fit`
    （AdamW、线性预热 / 线性衰减、梯度裁剪 1.0、进度条）。

    eval_fn()：每 eval_every 步调用一次（以及最后一步），返回一个数（例如留出集的平均损失）。
    num_threads：训练期间 torch 用的线程数（结束后恢复；None 表示不改）。
    返回 {"loss": 每步训练损失, "eval_steps": [...], "eval": [...], "seconds": 训练用时}。
    """
    from .train import fit, warmup_linear_lr

    _check_lm(model)
    steps, batch_size, block = (positive_int(v, n) for v, n in ((steps, "steps"), (batch_size, "batch_size"),
                                                                    (block, "block")))
    if block > model.config.max_len:
        raise ValueError(f"窗口长度 block={block} 超过了模型的 max_len={model.config.max_len}。")
    ids = _check_stream(ids, block, "ids")
    gen = torch.Generator().manual_seed(int(seed))
    offsets = torch.arange(block + 1)

    def loss_at(step):
        start = torch.randint(0, ids.numel() - block, (batch_size,), generator=gen)
        window = ids[start[:, None] + offsets]                          # (B, block + 1)
        logits = model(window[:, :-1])                                  # (B, block, V)
        return nn.functional.cross_entropy(logits.flatten(0, 1), window[:, 1:].flatten())

    rec = fit(model, loss_at, steps=steps, lr_at=lambda s: warmup_linear_lr(s, peak_lr, warmup_steps, steps),
              betas=(0.9, 0.95), weight_decay=weight_decay, eval_fn=eval_fn, eval_every=eval_every,
              progress=progress, desc=desc, num_threads=num_threads)
    model.eval()
    return {"loss": rec.losses, "eval_steps": rec.eval_steps, "eval": rec.evals, "seconds": rec.seconds}


@torch.no_grad()
def mean_nll(model: GPT, ids: torch.Tensor, block: int, batch_size: int = 64) -> float:
    """留出序列上的平均负对数似然（nats / token）：切成不重叠的长 block 的窗口，
    ids[1:] 的每个 token 恰好被预测一次；上文只算到窗口开头为止，所以每个窗口开头几个 token 的上文较短。"""
    block = positive_int(block, "block")
    ids = _check_stream(ids, block, "ids")
    n = (ids.numel() - 1) // block * block
    x, y = ids[:n].view(-1, block), ids[1:n + 1].view(-1, block)   # (N, block)
    was_training = model.training
    model.eval()
    total = 0.0
    for i in range(0, x.shape[0], batch_size):
        logits = model(x[i:i + batch_size])
        total += nn.functional.cross_entropy(logits.flatten(0, 1), y[i:i + batch_size].flatten(),
                                             reduction="sum").item()
    rest = ids[n:]                                                 # 末尾不满一个窗口的部分
    if rest.numel() > 1:
        logits = model(rest[:-1][None])
        total += nn.functional.cross_entropy(logits[0], rest[1:], reduction="sum").item()
    model.train(was_training)
    return total / (ids.numel() - 1)


def encode_reviews(vocab, texts) -> torch.Tensor:
    """每条评论前放一个分隔符（vocab 的 0 号 token，⏎），接成一条长的一维 id 序列（第 13 章的做法）。"""
    if isinstance(texts, str):
        raise ValueError("texts 应为评论的列表，实际得到一个字符串（把它放进列表里：[text]）。")
    ids: list[int] = []
    for t in texts:
        ids.append(0)
        ids.extend(vocab.encode(t))
    return torch.tensor(ids, dtype=torch.long)


def load_gpt_zh() -> tuple[GPT, "CharVocab"]:
    """载入检查点 "gpt-zh"（`make checkpoints` 训练，SHA-256 核对），返回 (eval 模式的 GPT, CharVocab)。

    字表的特殊 token：0 号 ⏎（分隔符），1 号 □（字表之外的字），2、3 号 <好评>、<差评>（第 15 章的控制 token，
    预训练时从未出现）。训练记录与困惑度在 `model.meta` 里。"""
    from . import checkpoints
    from .tokenize import CharVocab

    state, meta = checkpoints.load("gpt-zh")
    model = GPT(GPTConfig(**meta["config"]))
    state = dict(state)
    state["lm_head.weight"] = state["tok_emb.weight"]          # 共享权重只存了一份
    model.load_state_dict(state)
    model.meta = meta
    return model.eval(), CharVocab.from_meta(meta["vocab"])
