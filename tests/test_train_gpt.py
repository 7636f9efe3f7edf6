"""python -m tfcourse.train_gpt：在 CPU 上用两个进程（torchrun + gloo）核对数据并行的三个等式——
2 个进程 × 8 = 1 个进程 × 16 = 1 个进程累积 2 次 × 8；停在第 15 步再接着走 = 一口气走 30 步——
以及常见的错误：全局批除不尽、接着训练时换了设置、--out 里已有一次训练、一个进程死掉（其余的很快退出、检查点还在）。"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest
import torch

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
TINY = ["--config", "tiny", "--steps", "30", "--global-batch", "16", "--quiet"]


def _train(args, procs: int = 1, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = (TORCHRUN if procs == 2 else [sys.executable]) + ["-m", "tfcourse.train_gpt", *map(str, args)]
    out = pathlib.Path(args[args.index("--out") + 1] if "--out" in args else args[args.index("--resume") + 1])
    out.parent.mkdir(parents=True, exist_ok=True)
    # TMPDIR：torchrun 的临时目录放在测试自己的 tmp_path 里，不在 /tmp 留下
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", TMPDIR=str(out.parent))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def _ok(result) -> None:
    assert result.returncode == 0, result.stderr[-2000:]


def _log(d: pathlib.Path) -> dict:
    return json.loads((d / "log.json").read_text(encoding="utf-8"))


def _weights(d: pathlib.Path) -> dict:
    return torch.load(d / "model.pt", map_location="cpu", weights_only=True)


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _moved(d: pathlib.Path) -> float:
    """训练把权重移动了多少（与同一种子的初始权重比）：等式里的差要比它小好几个数量级。"""
    from tfcourse.train_gpt import build_model, review_stream

    torch.manual_seed(0)
    init = build_model("gpt", "tiny", len(review_stream()[1]), 0.0).state_dict()
    return _max_diff(init, _weights(d))


def test_data_parallel_accumulation_and_resume_reach_the_same_weights(tmp_path):
    """同一次 30 步的训练（dropout 0），四种走法：1 × 16、2 个进程 × 8、1 个进程累积 2 × 8、停在第 15 步再接着走。"""
    from tfcourse.train_gpt import run

    out = {name: tmp_path / name for name in ("one", "two", "accum", "stopped")}
    _ok(_train([*TINY, "--out", out["one"]]))                           # 命令行，一个进程
    _ok(_train([*TINY, "--out", out["two"]], procs=2))                  # torchrun，两个进程
    # 其余几种在本进程里调用命令的入口 run（与命令行是同一段代码，省下几次启动）
    run([*TINY, "--grad-accum", "2", "--out", str(out["accum"])])
    stopped = run([*TINY, "--stop-after", "15", "--out", str(out["stopped"])])
    assert stopped["steps_done"] == 15 and not stopped["finished"] and not (out["stopped"] / "model.pt").exists()
    run(["--resume", str(out["stopped"]), "--quiet"])

    one, two, accum = (_log(out[k]) for k in ("one", "two", "accum"))
    assert (two["world_size"], two["backend"], two["global_batch"], two["grad_accum"]) == (2, "gloo", 16, 1)
    assert (accum["world_size"], accum["grad_accum"]) == (1, 2)
    assert len(one["losses"]) == len(two["losses"]) == len(accum["losses"]) == 30
    moved = _moved(out["one"])
    for other in ("two", "accum"):
        losses = torch.tensor(_log(out[other])["losses"])
        assert float((losses - torch.tensor(one["losses"])).abs().max()) < 1e-4, other   # float32 舍入
        assert _max_diff(_weights(out["one"]), _weights(out[other])) < 1e-3 * moved, other
    assert one["losses"][-1] < one["losses"][0] - 1.0                    # 真的在学

    done = _log(out["stopped"])
    assert done["resumed_from"] == 15 and done["finished"] and len(done["losses"]) == 30
    assert torch.allclose(torch.tensor(done["losses"]), torch.tensor(one["losses"]), atol=1e-6)
    assert _max_diff(_weights(out["one"]), _weights(out["stopped"])) < 1e-6


def test_mistakes_get_a_clear_error_and_nothing_is_lost(tmp_path):
    r = _train([*TINY, "--global-batch", "15", "--out", tmp_path / "odd"], procs=2)
    assert r.returncode != 0 and "要能被 进程数 × --grad-accum = 2 × 1 = 2 整除" in r.stderr
    assert not (tmp_path / "odd").exists()
    done = tmp_path / "done"
    _ok(_train(["--config", "tiny", "--steps", "2", "--global-batch", "4", "--quiet", "--out", done]))
    before = (done / "log.json").read_bytes()
    r = _train([*TINY, "--out", done])
    assert r.returncode == 2 and "已经有一次训练" in r.stderr and "--resume" in r.stderr
    assert (done / "log.json").read_bytes() == before                    # 什么也没有覆盖
    r = _train(["--resume", done, "--seed", "1"])
    assert r.returncode == 2 and "另一种设置" in r.stderr and "seed 原来是 0，这次给了 1" in r.stderr
    r = _train(["--resume", done])
    assert r.returncode == 2 and "已经走完了全部 2 步" in r.stderr


def test_a_dying_rank_stops_the_others_quickly_and_the_checkpoint_survives(tmp_path):
    out = tmp_path / "dies"
    cmd = TORCHRUN + ["-m", "tfcourse.train_gpt", "--config", "tiny", "--steps", "100000", "--save-every", "20",
                      "--global-batch", "16", "--quiet", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=str(tmp_path)))
    try:
        deadline = time.monotonic() + 120
        while not (out / "checkpoint.pt").exists():                     # 至少存过一次检查点
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else "等检查点超时"
            time.sleep(0.2)
        victim = next(pid for pid in _children(proc.pid) if "RANK=1" in _environ(pid))
        os.kill(victim, 9)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)                            # 其余进程一分钟之内退出，不挂住
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and waited < 60
    assert "通信断了" in err or "训练停下了" in err
    step = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)["step"]
    assert step >= 20 and step % 20 == 0                                 # 检查点完好，能接着训练


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def _environ(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/environ").read_bytes().replace(b"\0", b"\n").decode(errors="replace")
    except OSError:
        return ""
