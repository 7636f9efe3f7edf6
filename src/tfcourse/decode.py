"""推理：贪心解码（greedy decoding）与束搜索（beam search）。第 10 章引入。

两者都是批量的：一批源序列只编码一次；每一步把目前生成的整段前缀送进解码器（不用 KV 缓存，第 13 章再讲）。
返回的序列不含开头的 BOS；遇到 EOS 停止，EOS 本身保留，之后补 pad_id。
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import positive_int

__all__ = ["greedy_decode", "beam_search", "BeamResult", "length_penalty"]


def _check_common(model, src, bos_id, eos_id, max_len):
    from .model import Transformer
    if not isinstance(model, Transformer):
        raise ValueError(f"model 应为 tfcourse.model.Transformer，实际得到 {type(model).__name__}。")
    V = model.config.tgt_vocab_size
    for name, tok in (("bos_id", bos_id), ("eos_id", eos_id)):
        if isinstance(tok, bool) or not isinstance(tok, int) or not 0 <= tok < V:
            raise ValueError(f"{name} 应为目标词表里的 id（0 到 {V - 1}），实际为 {tok!r}。")
    max_len = positive_int(max_len, "max_len")
    if max_len + 1 > model.config.max_len:
        raise ValueError(f"max_len={max_len} 加上 BOS 超过了模型的 config.max_len={model.config.max_len}。")
    model._check_ids(src, "src", model.config.src_vocab_size)
    return max_len


@torch.no_grad()
def greedy_decode(model, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int = 32) -> torch.Tensor:
    """每一步取概率最大的 token。src (B, S) → 生成的 id (B, ≤ max_len)。"""
    max_len = _check_common(model, src, bos_id, eos_id, max_len)
    was_training = model.training
    model.eval()
    pad = model.config.pad_id
    memory, memory_mask = model.encode(src), model.source_mask(src)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)   # (B, 1)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model.decode(ys, memory, memory_mask)[:, -1]       # (B, V)：只要最后一个位置
        nxt = logits.log_softmax(-1).topk(1, dim=-1).indices[:, 0]  # 与束宽 1 的束搜索同样挑法
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == eos_id
        if bool(done.all()):
            break
    model.train(was_training)
    return ys[:, 1:]


def length_penalty(length: torch.Tensor | int, alpha: float) -> torch.Tensor:
    """长度归一化的分母 ((5 + |Y|) / 6)^α（Wu et al., 2016, GNMT 式 14）。α = 0 时不归一化。"""
    return ((5.0 + torch.as_tensor(length, dtype=torch.float32)) / 6.0) ** alpha


@dataclass(frozen=True)
class BeamResult:
    """束搜索的结果：tokens (B, L) 为每句得分最高的序列；scores (B,) 为其归一化后的对数概率。"""

    tokens: torch.Tensor
    scores: torch.Tensor


@torch.no_grad()
def beam_search(model, src: torch.Tensor, bos_id: int, eos_id: int, beam_size: int = 4, max_len: int = 32,
                alpha: float = 0.6, return_scores: bool = False):
    """束搜索：每句保留 beam_size 个最好的前缀；结束的假设按 对数概率 / length_penalty 比较。

    src (B, S) → (B, ≤ max_len) 的 id（与 greedy_decode 同格式）；return_scores=True 时返回 BeamResult。
    beam_size=1 时与贪心解码完全相同。
    """
    max_len = _check_common(model, src, bos_id, eos_id, max_len)
    K = positive_int(beam_size, "beam_size")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha < 0:
        raise ValueError(f"alpha（长度惩罚指数）应为非负实数，实际为 {alpha!r}。")
    was_training = model.training
    model.eval()
    B, device, pad = src.shape[0], src.device, model.config.pad_id
    memory, memory_mask = model.encode(src), model.source_mask(src)
    memory = memory.repeat_interleave(K, dim=0)                      # (B, S, C) -> (B*K, S, C)
    memory_mask = memory_mask.repeat_interleave(K, dim=0)            # (B*K, 1, S)
    ys = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)
    # 开始时每句只有一个真假设，其余 K-1 个设为 -inf，免得第一步选出 K 个一样的前缀。
    logp = torch.full((B, K), float("-inf"), device=device)
    logp[:, 0] = 0.0
    logp = logp.view(-1)                                             # (B*K,)
    finished = torch.zeros(B * K, dtype=torch.bool, device=device)
    lengths = torch.zeros(B * K, device=device)                      # 不含 BOS，含 EOS
    for _ in range(max_len):
        step = model.decode(ys, memory, memory_mask)[:, -1].log_softmax(-1)   # (B*K, V)
        V = step.shape[-1]
        # 已结束的假设只能"接 pad"，得分不变。
        frozen = torch.full_like(step, float("-inf"))
        frozen[:, pad] = 0.0
        step = torch.where(finished[:, None], frozen, step)
        cand = logp[:, None] + step                                  # (B*K, V)
        new_len = lengths[:, None] + (~finished[:, None]).float()    # (B*K, 1)
        rank = cand / length_penalty(new_len, alpha)                 # 按归一化得分挑
        top = rank.view(B, K * V).topk(K, dim=-1).indices           # (B, K)
        beam = top // V + torch.arange(B, device=device)[:, None] * K   # 来自哪条旧假设
        tok = top % V
        beam, tok = beam.reshape(-1), tok.reshape(-1)
        logp = cand.view(-1)[beam * V + tok]
        lengths = new_len.view(-1)[beam]
        was_done = finished[beam]
        ys = torch.cat([ys[beam], tok[:, None]], dim=1)
        finished = was_done | (tok == eos_id)
        if bool(finished.all()):
            break
    score = (logp / length_penalty(lengths, alpha)).view(B, K)
    best = score.argmax(-1) + torch.arange(B, device=device) * K
    out = ys[best, 1:]
    model.train(was_training)
    # 去掉整列都是 pad 的尾巴，使长度与 greedy_decode 一致。
    keep = int((out != pad).any(0).nonzero().max()) + 1 if bool((out != pad).any()) else out.shape[1]
    out = out[:, :keep]
    return BeamResult(out, score.view(-1)[best]) if return_scores else out
