"""训练循环（带进度条）。第 1 章引入，之后训练模型的章节共用。

第 10 章加入序列到序列（seq2seq）的训练：带标签平滑的交叉熵 `label_smoothed_cross_entropy`、
两种预热学习率 `noam_lr`（论文式 3）与 `warmup_linear_lr`（线性预热再线性衰减），以及各章共用的训练循环 `fit`
（学习率日程、梯度裁剪、进度条、验证曲线、计时）；`train_seq2seq` 只是给它一个算 seq2seq 损失的函数。
第 13 章的 `gpt.train_lm`、第 14 章的 `classify.fine_tune`、第 15 章的 `control.fine_tune_lm` 也都调用 `fit`。
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from ._checks import finite_number, positive_int

__all__ = [
    "TrainResult", "accuracy", "train_classifier",
    "label_smoothed_cross_entropy", "noam_lr", "warmup_linear_lr", "FitResult", "Seq2SeqResult", "fit",
    "train_seq2seq",
]


@dataclass
class TrainResult:
    """一次训练的记录。solved_at：第一次在评估集上达到 target_accuracy 的步数（没达到为 None）。"""

    steps_run: int
    solved_at: int | None
    final_accuracy: float
    seconds: float
    history: list[tuple[int, float]] = field(default_factory=list)   # (步数, 评估准确率)


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """分类准确率（评估模式下计算，结束后恢复原来的模式）。"""
    was_training = model.training
    model.eval()
    acc = (model(x).argmax(dim=-1) == y).float().mean().item()
    model.train(was_training)
    return acc


def train_classifier(
    model: nn.Module,
    batch_fn: Callable[[], tuple[torch.Tensor, torch.Tensor]],
    eval_data: tuple[torch.Tensor, torch.Tensor],
    *,
    max_steps: int,
    lr: float = 3e-3,
    eval_every: int = 50,
    target_accuracy: float | None = None,
    progress=None,
    callback: Callable[[int, nn.Module], None] | None = None,
) -> TrainResult:
    """用 Adam 和交叉熵训练分类器，每 eval_every 步在 eval_data 上评估一次。

    batch_fn() 每次返回一个训练批 (x, y)。给了 target_accuracy 时，一旦达到就提前停止。
    progress：可选的 tqdm 进度条，每步前进 1（由调用者创建，便于多次训练共用一个进度条）。
    callback(step, model)：可选，训练开始前（step=0）和每一步之后调用，例如记录注意力权重。
    """
    max_steps = positive_int(max_steps, "max_steps")
    eval_every = positive_int(eval_every, "eval_every")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    history: list[tuple[int, float]] = []
    solved_at = None
    start = time.perf_counter()
    model.train()
    step = 0
    if callback is not None:
        callback(0, model)
    for step in range(1, max_steps + 1):
        x, y = batch_fn()
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if progress is not None:
            progress.update(1)
        if callback is not None:
            callback(step, model)
        if step % eval_every == 0 or step == max_steps:
            acc = accuracy(model, *eval_data)
            history.append((step, acc))
            if target_accuracy is not None and acc >= target_accuracy:
                solved_at = step
                break
    final = history[-1][1] if history else accuracy(model, *eval_data)
    return TrainResult(step, solved_at, final, time.perf_counter() - start, history)


# ---------------------------------------------------------------- 第 10 章：序列到序列的训练

def label_smoothed_cross_entropy(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.0,
                                 ignore_index: int | None = None) -> torch.Tensor:
    """带标签平滑（label smoothing）的交叉熵，与 torch.nn.CrossEntropyLoss(label_smoothing=…, ignore_index=…) 相同。

    logits (..., V)，target (...) 的类别编号。目标分布 = (1 − ε)·独热 + ε/V·均匀（均匀的那份也分给正确答案），
    所以每个位置的损失 = (1 − ε)·(−log p_正确) + ε·(−所有类的 log p 的平均)。
    ignore_index 位置（如填充）不计入，其余位置取平均。
    """
    if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing（标签平滑系数 ε）应在 [0, 1] 之间，实际为 {smoothing!r}。")
    if logits.shape[:-1] != target.shape:
        raise ValueError(f"logits 应为 target 的形状再加一维词表：logits {tuple(logits.shape)}，target {tuple(target.shape)}。")
    logp = logits.log_softmax(dim=-1)                                       # (..., V)
    safe = target if ignore_index is None else target.masked_fill(target == ignore_index, 0)   # 忽略的位置随便放一个合法编号
    nll = -logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)                  # (...,)：−log p_正确
    uniform = -logp.mean(dim=-1)                                            # (...,)：对均匀分布的交叉熵
    loss = (1.0 - smoothing) * nll + smoothing * uniform
    if ignore_index is not None:
        loss = loss[target != ignore_index]
    return loss.mean()


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """论文式 (3) 的学习率：factor · d_model^−0.5 · min(step^−0.5, step · warmup^−1.5)。

    前 warmup_steps 步线性上升，之后按 1/√step 下降；峰值在 step = warmup_steps。step 从 1 数起。
    """
    step = positive_int(step, "step")
    d_model = positive_int(d_model, "d_model")
    warmup_steps = positive_int(warmup_steps, "warmup_steps")
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


def warmup_linear_lr(step: int, peak_lr: float, warmup_steps: int, total_steps: int) -> float:
    """线性预热再线性衰减：前 warmup_steps 步从 peak/warmup 升到 peak，之后线性降向 0（最后一步是 peak/(总步数−预热)，不为 0）。

    step 从 1 数起。warmup_steps 可以为 0（不预热）。
    """
    step = positive_int(step, "step")
    total_steps = positive_int(total_steps, "total_steps")
    peak_lr = finite_number(peak_lr, "peak_lr")
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or not 0 <= warmup_steps < total_steps:
        raise ValueError(f"warmup_steps 应为 0 … total_steps−1（{total_steps - 1}）之间的整数，实际为 {warmup_steps!r}。")
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * max(total_steps - step + 1, 0) / (total_steps - warmup_steps)


@dataclass
class FitResult:
    """一次训练的记录（`fit` 返回）：跑了几步、训练用了几秒（不含验证）、每步的损失与学习率，
    以及每次验证的步数与结果（验证曲线）。"""

    steps: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    evals: list[float] = field(default_factory=list)
    eval_seconds: float = 0.0

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else float("inf")

    def log(self, step: int, loss: float, lr: float) -> None:
        self.steps = step
        self.losses.append(loss)
        self.lrs.append(lr)

    def validate(self, step: int, model: nn.Module, eval_fn: Callable[[], float]) -> None:
        """在 eval 模式、不记梯度的情况下调用 eval_fn()，记进验证曲线；用时单独记，不算进训练时间。"""
        t0 = time.perf_counter()
        model.eval()
        with torch.no_grad():
            self.evals.append(float(eval_fn()))
        self.eval_steps.append(step)
        model.train()
        self.eval_seconds += time.perf_counter() - t0


Seq2SeqResult = FitResult          # 第 10 章的名字：train_seq2seq 返回的就是 fit 的记录


def _progress_bar(progress, total: int, desc: str):
    """progress：True 新建一个 tqdm 进度条，False 不显示，或者就是调用者建好的进度条。返回 (进度条, 是否自己建的)。"""
    if progress is True:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc), True
    return (None if progress is False else progress), False


def _show_progress(bar, record: FitResult, steps: int) -> None:
    """进度条前进一步；每 20 步（和每次验证之后）显示最近 20 步的平均损失、学习率和最近一次验证的结果。"""
    bar.update(1)
    step = record.steps
    just_validated = bool(record.eval_steps) and record.eval_steps[-1] == step
    if step % 20 == 0 or step == steps or just_validated:
        recent = record.losses[-20:]
        extra = {"val": f"{record.evals[-1]:.3f}"} if record.evals else {}
        bar.set_postfix(loss=f"{sum(recent) / len(recent):.3f}", lr=f"{record.lrs[-1]:.2e}", **extra,
                        refresh=False)


def fit(
    model: nn.Module,
    loss_at: Callable[[int], torch.Tensor] | None = None,
    *,
    steps: int,
    lr_at: Callable[[int], float],
    params=None,
    betas: tuple[float, float] = (0.9, 0.999),
    weight_decay: float = 0.01,
    clip_norm: float | None = 1.0,
    eval_fn: Callable[[], float] | None = None,
    eval_every: int = 0,
    num_threads: int | None = None,
    progress=True,
    desc: str = "训练",
    backward: Callable[[int], float] | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    start_step: int = 0,
    after_step: Callable[[int, torch.optim.Optimizer, "FitResult"], None] | None = None,
) -> FitResult:
    """各章共用的训练循环。第 step 步（从 1 数起）：学习率设为 lr_at(step) → loss = loss_at(step)
    （它自己取这一步的批、做前向）→ 反向 → 梯度范数裁剪到 clip_norm（None 不裁剪）→ AdamW 走一步。

    params：要训练的参数（默认是 model 里 requires_grad 的全部）。eval_fn()：每 eval_every 步
    （以及最后一步）在 eval 模式下调用一次，返回一个数（验证损失、准确率……），记进验证曲线。
    num_threads：训练期间 torch 用的线程数（结束后恢复）。progress 见 `_progress_bar`。
    结束后模型恢复调用前的 train/eval 模式。第 10 章引入；第 13–15 章的训练都调用它。

    附录 B 的 `train_gpt` 还用到四个参数：backward(step) 代替 loss_at——自己取批、前向、反向
    （梯度累积、多进程时要分几次反向），返回这一步要记的损失；optimizer：接着用的优化器（带着它的状态），
    None 就新建 AdamW；start_step：已经走完的步数（接着训练时从 start_step + 1 走到 steps）；
    after_step(step, optimizer, record)：每步之后调用（存检查点）。
    """
    steps = positive_int(steps, "steps")
    if (loss_at is None) == (backward is None):
        raise ValueError("loss_at 与 backward 要给且只给一个。")
    if isinstance(start_step, bool) or not isinstance(start_step, int) or not 0 <= start_step < steps:
        raise ValueError(f"start_step 应为 0 … steps−1（{steps - 1}）之间的整数，实际为 {start_step!r}。")
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 0:
        raise ValueError(f"eval_every 应为 ≥ 0 的整数（0 = 不验证），实际为 {eval_every!r}。")
    params = [p for p in model.parameters() if p.requires_grad] if params is None else list(params)
    if not params:
        raise ValueError("模型里没有要训练的参数（requires_grad 全为 False）。")
    opt = optimizer if optimizer is not None else \
        torch.optim.AdamW(params, lr=lr_at(start_step + 1), betas=betas, weight_decay=weight_decay)
    record = FitResult(start_step, 0.0)
    bar, own_bar = _progress_bar(progress, steps, desc)
    if bar is not None and start_step:
        bar.update(start_step)
    old_threads, was_training = torch.get_num_threads(), model.training
    if num_threads is not None:
        torch.set_num_threads(positive_int(num_threads, "num_threads"))
    model.train()
    start = time.perf_counter()
    try:
        for step in range(start_step + 1, steps + 1):
            lr = lr_at(step)
            for group in opt.param_groups:
                group["lr"] = lr
            if backward is None:
                loss = loss_at(step)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                loss_value = loss.item()
            else:
                opt.zero_grad(set_to_none=True)
                loss_value = float(backward(step))
            if clip_norm is not None:
                nn.utils.clip_grad_norm_(params, clip_norm)
            opt.step()
            record.log(step, loss_value, lr)
            if after_step is not None:
                after_step(step, opt, record)
            if eval_fn is not None and eval_every and (step % eval_every == 0 or step == steps):
                record.validate(step, model, eval_fn)
            if bar is not None:
                _show_progress(bar, record, steps)
    finally:
        if num_threads is not None:
            torch.set_num_threads(old_threads)
        if own_bar:
            bar.close()
        model.train(was_training)
    record.seconds = time.perf_counter() - start - record.eval_seconds
    return record


def train_seq2seq(
    model: nn.Module,
    batch_fn: Callable[[], tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    *,
    steps: int,
    lr_at: Callable[[int], float],
    label_smoothing: float = 0.1,
    pad_id: int = 0,
    clip_norm: float | None = 1.0,
    betas: tuple[float, float] = (0.9, 0.98),
    weight_decay: float = 0.01,
    num_threads: int | None = None,
    progress=True,
    desc: str = "训练",
) -> FitResult:
    """用教师强制（teacher forcing）训练编码器–解码器：loss = 交叉熵(model(src, tgt_in), tgt_out)。

    batch_fn() 每次返回 (src (B, S), tgt_in (B, T), tgt_out (B, T))，tgt_in = <bos> + 目标，tgt_out = 目标 + <eos>；
    tgt_out 里等于 pad_id 的位置不计损失。lr_at(step) 给出第 step 步（从 1 数起）的学习率；
    其余（AdamW、裁剪、进度条、计时、线程数）都交给共用的训练循环 `fit`。
    """

    def loss_at(step):
        src, tgt_in, tgt_out = batch_fn()
        logits = model(src, tgt_in)                                        # (B, T, V)
        return nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(),
                                           ignore_index=pad_id, label_smoothing=label_smoothing)

    return fit(model, loss_at, steps=steps, lr_at=lr_at, params=model.parameters(), betas=betas,
               weight_decay=weight_decay, clip_norm=clip_norm, num_threads=num_threads,
               progress=progress, desc=desc)
