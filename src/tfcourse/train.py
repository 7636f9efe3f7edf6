"""训练循环（带进度条）。第 1 章引入，之后训练模型的章节共用。"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from ._checks import positive_int

__all__ = ["TrainResult", "accuracy", "train_classifier"]


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
