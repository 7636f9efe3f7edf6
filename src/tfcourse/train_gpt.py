"""在评论语料上训练课程的 GPT（或附录 A 的 LlamaGPT）：一台笔记本、两个进程、一台 GPU 机器，同一条命令。附录 B 引入。

    python -m tfcourse.train_gpt --config tiny --steps 30 --out runs/tiny
    torchrun --standalone --nproc_per_node=2 -m tfcourse.train_gpt --config tiny --steps 30 --out runs/tiny2
    python -m tfcourse.train_gpt --resume runs/tiny                    # 接着一次停下的训练

- 数据并行（DistributedDataParallel）：在 torchrun 下每个进程（rank）一份模型；每一步的全局批由同一个种子
  抽出，第 r 个进程只读它那一份（global_batch / world_size 个窗口），再分 grad_accum 次前向、反向；
  反向时 DDP 把各进程的梯度取平均（CPU 上用 gloo，有 CUDA 时用 NCCL）。所以 dropout 为 0 时，
  2 个进程 × 8、1 个进程 × 16、1 个进程累积 2 次 × 8 走的是同一条路（只差 float32 舍入）；
- 只有第 0 个进程写文件：DIR/run.json（这次训练的设置）、DIR/checkpoint.pt（每 --save-every 步：模型、优化器、
  已走的步数、数据生成器与随机数的状态）、最后的 DIR/model.pt（state_dict）与 DIR/log.json（每一步的损失等）；
- 训练循环是第 10 章的 `train.fit`（AdamW、线性预热 / 线性衰减、梯度裁剪 1.0、进度条）。
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import json
import os
import pathlib
import signal
import sys
import time

import torch
from torch import nn

__all__ = ["CONFIGS", "RunConfig", "TrainGPTError", "allreduce_seconds", "build_model", "data_parallel_step", "main",
           "review_stream", "run"]

SPECIALS = ("⏎", "□", "<好评>", "<差评>")          # 与检查点 gpt-zh 同一张字表
N_CHARS = 4000

# 预设：模型尺寸、窗口长度、峰值学习率。gpt-zh 与检查点 gpt-zh 同尺寸、同学习率（检查点用 --global-batch 32、
# --dropout 0.1 训练 8,000 步，并每 200 步量一次验证损失、留下最好的一步；这条命令不做后一件事）
CONFIGS = {
    "tiny": {"model": {"d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64}, "block": 32, "peak_lr": 5e-3},
    "gpt-zh": {"model": {"d_model": 128, "n_heads": 4, "n_layers": 2, "d_ff": 512}, "block": 64, "peak_lr": 5e-3},
    "wide": {"model": {"d_model": 256, "n_heads": 8, "n_layers": 4, "d_ff": 1024}, "block": 128, "peak_lr": 3e-3},
}


class TrainGPTError(Exception):
    """给读者看的中文错误（命令行只打印这句话，不打印回溯）。"""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """决定训练结果的设置（接着训练时必须完全相同）。world_size 与 grad_accum 不在里面：它们不改变结果。"""

    arch: str
    config: str
    steps: int
    global_batch: int
    seed: int
    dropout: float
    warmup: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@functools.lru_cache(maxsize=1)
def review_stream():
    """训练集的评论接成一条长序列（每条前一个 ⏎），以及字表：与检查点 gpt-zh 相同。"""
    from .data.reviews import split_reviews
    from .gpt import encode_reviews
    from .tokenize import CharVocab

    texts = split_reviews(0).train.texts
    vocab = CharVocab.build(texts, N_CHARS, specials=SPECIALS)
    return encode_reviews(vocab, texts), vocab


def build_model(arch: str, config: str, vocab_size: int, dropout: float) -> nn.Module:
    """--arch gpt：第 13 章的 GPT；--arch llama：附录 A 的 LlamaGPT（同样的宽度和层数，SwiGLU 宽 8/3·d，键值组数减半）。"""
    c = CONFIGS[config]
    m = dict(c["model"])
    if arch == "gpt":
        from .gpt import GPT, GPTConfig

        return GPT(GPTConfig(vocab_size=vocab_size, max_len=c["block"], dropout=dropout, **m))
    from .llama import LlamaConfig, LlamaGPT, swiglu_hidden

    m["d_ff"] = swiglu_hidden(m["d_model"], 16)
    return LlamaGPT(LlamaConfig(vocab_size=vocab_size, n_kv_heads=max(1, m["n_heads"] // 2), max_len=4 * c["block"],
                                dropout=dropout, **m))


# ---------------------------------------------------------------- 数据并行的一步

def data_parallel_step(net, windows, rank: int, world: int, grad_accum: int, device="cpu") -> float:
    """一步的前向与反向（不含优化器）：全局批 windows (G, T+1) 里，第 rank 个进程只读它那一份
    （G / world 个窗口），再分 grad_accum 次前向、反向，梯度累加在 .grad 里。net 是 DDP 包着的模型时，
    只在最后一次反向时把各进程的梯度取平均（其余几次用 no_sync 跳过通信）。返回全局批上的平均损失。"""
    import torch.distributed as dist

    per_rank = windows.shape[0] // world
    mine = windows[rank * per_rank:(rank + 1) * per_rank].to(device)   # (G/world, T+1)：只读自己那一份
    total = torch.zeros((), device=device)
    for i, mb in enumerate(mine.chunk(grad_accum)):                    # 每份 G/(world·accum) 个窗口
        last = i == grad_accum - 1
        sync = contextlib.nullcontext() if (last or world == 1) else net.no_sync()
        with sync:
            logits = net(mb[:, :-1])                                    # (micro, T, V)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), mb[:, 1:].flatten()) / grad_accum
            loss.backward()                                             # 梯度累加；最后一次时 DDP 求平均
        total += loss.detach()
    if world > 1:
        dist.all_reduce(total)                                          # 记下的是全局批上的平均损失
        total /= world
    return total.item()


# ---------------------------------------------------------------- 一次 all-reduce 要多久（附录 B 量它）

def _allreduce_worker(rank: int, world: int, port: int, n: int, repeats: int, out) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    x = torch.ones(n)
    times = []
    for _ in range(repeats + 1):                     # 第一次是预热
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        times.append(time.perf_counter() - t0)
    if rank == 0:
        out.put(sorted(times[1:])[len(times[1:]) // 2])
    dist.destroy_process_group()


def allreduce_seconds(n_floats: int, world: int = 2, repeats: int = 5) -> float:
    """world 个进程（本机、gloo、每个 1 个线程）对 n_floats 个 float32 做一次 all-reduce（求和）的用时，
    repeats 次的中位数（秒）。DDP 每一步对全部梯度做的就是它。"""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as sock:                    # 找一个空闲端口
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(_allreduce_worker, args=(world, port, int(n_floats), int(repeats), queue), nprocs=world,
                       start_method="spawn")
    return float(queue.get())


# ---------------------------------------------------------------- 命令行

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tfcourse.train_gpt", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=("gpt", "llama"), default="gpt", help="gpt：第 13 章；llama：附录 A 的块")
    p.add_argument("--config", choices=tuple(CONFIGS), default="tiny", help="模型尺寸与窗口长度的预设")
    p.add_argument("--steps", type=int, default=None, help="一共走多少步（默认 tiny 100、其余 8000）")
    p.add_argument("--global-batch", type=int, default=16, help="每一步全部进程加起来读多少个窗口")
    p.add_argument("--grad-accum", type=int, default=1, help="每个进程把它那一份分几次前向、反向")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--warmup", type=int, default=None, help="预热步数（默认总步数的 5%%）")
    p.add_argument("--out", type=pathlib.Path, default=None, help="写结果的目录（要么不存在，要么是空的）")
    p.add_argument("--save-every", type=int, default=0, help="每多少步存一次检查点（0：只在最后存）")
    p.add_argument("--resume", type=pathlib.Path, default=None, help="接着这个目录里停下的训练往下走")
    p.add_argument("--stop-after", type=int, default=None,
                   help="这一次只走到第 N 步就停（存好检查点；之后用 --resume 接着走）")
    p.add_argument("--threads", type=int, default=None, help="每个进程的 torch 线程数（默认：核数 / 进程数）")
    p.add_argument("--quiet", action="store_true", help="不显示进度条")
    return p


def _positive(name: str, value: int) -> int:
    if value is None or value < 1:
        raise TrainGPTError(f"{name} 应为正整数，实际为 {value}。")
    return value


def _dist_env() -> tuple[int, int, int]:
    """(rank, world_size, local_rank)：torchrun 设的环境变量；单进程时是 (0, 1, 0)。"""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def _plan(args, world: int) -> tuple[RunConfig, pathlib.Path]:
    """检查参数，得到这次训练的设置和输出目录。出错时抛 TrainGPTError（每个进程都会同样地出错、退出）。"""
    if args.resume is not None:
        out = args.resume
        saved = out / "run.json"
        if not saved.is_file():
            raise TrainGPTError(f"--resume {out}：这里没有 run.json，不是 train_gpt 写的训练目录。")
        if args.out is not None and args.out.resolve() != out.resolve():
            raise TrainGPTError(f"接着训练时结果写回原来的目录 {out}，不要另给 --out（实际给了 {args.out}）。")
        try:
            before = json.loads(saved.read_text(encoding="utf-8"))["run"]
            RunConfig(**before)
        except (ValueError, KeyError, TypeError):
            raise TrainGPTError(f"--resume {out}：run.json 读不懂（被改过或不完整）。") from None
        given = {k: v for k, v in vars(args).items() if k in before and v is not None
                 and _explicit(k, args)}
        changed = {k: (before[k], v) for k, v in given.items() if before[k] != v}
        if changed:
            what = "；".join(f"{k} 原来是 {a}，这次给了 {b}" for k, (a, b) in changed.items())
            raise TrainGPTError(f"{out} 里是另一种设置的训练，接着训练必须用同样的设置：{what}。"
                                f"（进程数与 --grad-accum 可以换：它们不改变结果。）")
        run_cfg = RunConfig(**before)
        if not (out / "checkpoint.pt").is_file():
            raise TrainGPTError(f"--resume {out}：这次训练还没有存过检查点（checkpoint.pt），只能从头开始。")
    else:
        if args.out is None:
            raise TrainGPTError("要用 --out 指定写结果的目录（或用 --resume 接着一次停下的训练）。")
        out = args.out
        if (out / "run.json").exists():
            raise TrainGPTError(f"{out} 里已经有一次训练（run.json）：换一个目录，"
                                f"或用 --resume {out} 接着它往下走。什么也没有覆盖。")
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise TrainGPTError(f"--out {out} 已经存在而且不是空目录：换一个目录。什么也没有覆盖。")
        steps = args.steps if args.steps is not None else (100 if args.config == "tiny" else 8000)
        _positive("--steps", steps)
        warmup = args.warmup if args.warmup is not None else steps // 20
        if not 0 <= warmup < steps:
            raise TrainGPTError(f"--warmup 应在 0 … {steps - 1} 之间，实际为 {warmup}。")
        if not 0.0 <= args.dropout < 1.0:
            raise TrainGPTError(f"--dropout 应在 [0, 1) 之间，实际为 {args.dropout}。")
        run_cfg = RunConfig(args.arch, args.config, steps, _positive("--global-batch", args.global_batch),
                            args.seed, float(args.dropout), warmup)
    _positive("--grad-accum", args.grad_accum)
    if run_cfg.global_batch % (world * args.grad_accum):
        raise TrainGPTError(
            f"--global-batch {run_cfg.global_batch} 要能被 进程数 × --grad-accum = {world} × {args.grad_accum} = "
            f"{world * args.grad_accum} 整除（每个进程、每次前向读同样多个窗口）；"
            f"可以改成 {world * args.grad_accum} 的倍数，或换 --grad-accum。")
    if args.save_every < 0:
        raise TrainGPTError(f"--save-every 应 ≥ 0，实际为 {args.save_every}。")
    if args.stop_after is not None and not 0 < args.stop_after <= run_cfg.steps:
        raise TrainGPTError(f"--stop-after 应在 1 … {run_cfg.steps} 之间，实际为 {args.stop_after}。")
    return run_cfg, out


def _explicit(name: str, args) -> bool:
    """命令行上真的写了这个选项（默认值不算：接着训练时没写的就沿用原来的）。"""
    flag = "--" + name.replace("_", "-")
    return any(a == flag or a.startswith(flag + "=") for a in args._argv)


def _save_atomic(obj, path: pathlib.Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _write_json(obj, path: pathlib.Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def run(argv=None) -> dict:
    """训练一次（命令行的全部逻辑）；返回第 0 个进程写进 log.json 的内容（其余进程返回 {}）。"""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from .train import fit, warmup_linear_lr

    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    args._argv = argv
    rank, world, local_rank = _dist_env()
    run_cfg, out = _plan(args, world)
    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    device = torch.device(f"cuda:{local_rank}" if cuda else "cpu")
    threads = args.threads or max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    caller_threads = torch.get_num_threads()     # 在笔记本里调用 run 时，结束后还给调用者
    torch.set_num_threads(threads)
    if cuda:
        torch.cuda.set_device(device)            # NCCL 的集合通信（all_gather_object 等）用"当前"这块卡
    if world > 1:
        # 有进程死掉时，其余进程最多等这么久就报错退出（torchrun 通常更早就把它们停下）
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
    try:
        return _train(args, run_cfg, out, rank, world, backend, device, fit, warmup_linear_lr, DDP)
    finally:
        torch.set_num_threads(caller_threads)
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()


def _train(args, run_cfg, out, rank, world, backend, device, fit, warmup_linear_lr, DDP):
    import torch.distributed as dist

    stream, vocab = review_stream()
    block, peak_lr = CONFIGS[run_cfg.config]["block"], CONFIGS[run_cfg.config]["peak_lr"]
    torch.manual_seed(run_cfg.seed)                                   # 每个进程同样的初始权重
    model = build_model(run_cfg.arch, run_cfg.config, len(vocab), run_cfg.dropout).to(device)
    data_gen = torch.Generator().manual_seed(run_cfg.seed)             # 抽全局批的生成器：每个进程一样
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.0, betas=(0.9, 0.95),
                            weight_decay=0.1)
    start_step, losses = 0, []
    if args.resume is not None:
        ckpt = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=True)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        data_gen.set_state(ckpt["data_generator"])
        states = ckpt["torch_rng"]
        if len(states) == world:                                    # 进程数变了：dropout 的随机数按种子另起
            torch.set_rng_state(states[rank]["cpu"])
            if "cuda" in states[rank] and device.type == "cuda":
                torch.cuda.set_rng_state(states[rank]["cuda"], device)
        start_step, losses = ckpt["step"], list(ckpt["losses"])
        if start_step >= run_cfg.steps:
            raise TrainGPTError(f"{out} 里的训练已经走完了全部 {run_cfg.steps} 步。")
    elif rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        _write_json({"run": run_cfg.to_dict(), "vocab_size": len(vocab)}, out / "run.json")
    net = DDP(model) if world > 1 else model
    offsets = torch.arange(block + 1)
    n = stream.numel()

    def backward(step):
        starts = torch.randint(0, n - block, (run_cfg.global_batch,), generator=data_gen)   # 全局批：每个进程一样
        windows = stream[starts[:, None] + offsets]                    # (global_batch, block + 1)
        return data_parallel_step(net, windows, rank, world, args.grad_accum, device)

    current = {"losses": []}                                           # 这一次运行走过的步的损失

    def save(step, optimizer):
        mine = {"cpu": torch.get_rng_state()}
        if device.type == "cuda":
            mine["cuda"] = torch.cuda.get_rng_state(device)           # GPU 上 dropout 用的是这一份
        states = [mine]
        if world > 1:
            states = [None] * world
            dist.all_gather_object(states, mine)                      # 每个进程 dropout 的随机数状态
        if rank == 0:
            _save_atomic({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "data_generator": data_gen.get_state(), "torch_rng": states,
                          "losses": losses + current["losses"], "run": run_cfg.to_dict()}, out / "checkpoint.pt")

    stop = args.stop_after or run_cfg.steps

    def after_step(step, optimizer, record):
        current["losses"] = list(record.losses)
        if step == stop or (args.save_every and step % args.save_every == 0):
            save(step, optimizer)
        if step == stop and stop < run_cfg.steps:
            raise _Stopped(step)

    t0 = time.perf_counter()
    stopped = False
    try:
        fit(net, backward=backward, steps=run_cfg.steps, optimizer=opt, start_step=start_step,
                  lr_at=lambda s: warmup_linear_lr(s, peak_lr, run_cfg.warmup, run_cfg.steps),
                  after_step=after_step, progress=rank == 0 and not args.quiet,
                  desc=f"训练 {run_cfg.arch}（{run_cfg.config}，{world} 个进程）")
    except _Stopped:
        stopped = True
    new_losses = current["losses"]
    seconds = time.perf_counter() - t0
    if rank != 0:
        return {}
    log = {"world_size": world, "backend": backend, "global_batch": run_cfg.global_batch,
           "grad_accum": args.grad_accum, "losses": losses + list(new_losses), "steps_done": start_step + len(new_losses),
           "run": run_cfg.to_dict(), "seconds": round(seconds, 3), "resumed_from": start_step,
           "threads_per_process": torch.get_num_threads(),
           "params": sum(p.numel() for p in model.parameters()), "finished": not stopped}
    _write_json(log, out / "log.json")
    if not stopped:
        _save_atomic(model.state_dict(), out / "model.pt")
    return log


class _Stopped(Exception):
    """--stop-after：走到这一步就停（检查点已经存好）。"""


def main(argv=None) -> int:
    rank = _dist_env()[0]

    def on_term(signum, frame):               # torchrun 在另一个进程死掉时给其余进程发 SIGTERM
        if rank == 0:
            print("\n训练停下了：另一个进程退出了（或收到了停止信号）。已经存下的检查点还在，"
                  "用 --resume 目录 接着训练。", file=sys.stderr, flush=True)
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_term)
    try:
        log = run(argv)
    except TrainGPTError as e:
        if rank == 0:
            print(f"错误：{e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        if "gloo" in str(e).lower() or "timed out" in str(e).lower() or "connection" in str(e).lower():
            print(f"错误（第 {rank} 个进程）：和其他进程的通信断了（{str(e).splitlines()[0][:200]}）。"
                  f"多半是另一个进程已经退出；已经存下的检查点还在，用 --resume 接着训练。", file=sys.stderr)
            return 1
        raise
    if log and rank == 0:
        done = "走完了" if log["finished"] else "停在"
        print(f"{done}第 {log['steps_done']} 步：{log['world_size']} 个进程（{log['backend']}），"
              f"最后一步的损失 {log['losses'][-1]:.4f}，用时 {log['seconds']:.1f} 秒。结果在 {_out_dir(argv)}。")
    return 0


def _out_dir(argv) -> str:
    argv = list(sys.argv[1:] if argv is None else argv)
    for flag in ("--resume", "--out"):
        if flag in argv:
            return argv[argv.index(flag) + 1]
    return "?"


if __name__ == "__main__":
    sys.exit(main())
