"""随课程包发布的检查点：文件与 manifest 一致、被改动会被发现、每个作业都有检查点。

每个检查点"重新载入后仍达到记录的数字"由各自的测试负责（见 tests/test_ch14_models.py 等）。
"""
from __future__ import annotations

import hashlib
import importlib
import pathlib
import shutil
import sys

import pytest
import torch

from tfcourse import checkpoints

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _job_names():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        return {importlib.import_module(f"ckpt_jobs.{p.stem}").NAME
                for p in (ROOT / "tools" / "ckpt_jobs").glob("*.py") if not p.name.startswith("_")}
    finally:
        sys.path.remove(str(ROOT / "tools"))


def test_every_job_has_a_shipped_checkpoint_and_nothing_else():
    assert set(checkpoints.names()) == _job_names()


@pytest.mark.parametrize("name", checkpoints.names())
def test_file_matches_manifest_and_loads(name):
    entry = checkpoints.manifest()[name]
    data = (checkpoints.DIRECTORY / entry["file"]).read_bytes()
    assert len(data) == entry["bytes"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    state, meta = checkpoints.load(name)
    assert state and all(isinstance(v, torch.Tensor) for v in state.values())
    assert all(torch.isfinite(v).all() for v in state.values() if v.is_floating_point())
    assert isinstance(meta, dict) and meta.get("threads")


def test_total_size_stays_small():
    total = sum(e["bytes"] for e in checkpoints.manifest().values())
    assert total < 30e6, f"检查点一共 {total / 1e6:.1f} MB"


def test_save_load_roundtrip_and_tampering_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "DIRECTORY", tmp_path)
    monkeypatch.setattr(checkpoints, "MANIFEST", tmp_path / "manifest.json")
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    entry = checkpoints.save("demo", {"w": w}, {"seeds": [0, 1], "acc": 0.5})
    state, meta = checkpoints.load("demo")
    assert torch.equal(state["w"], w) and meta == {"seeds": [0, 1], "acc": 0.5}
    again = checkpoints.save("demo", {"w": w}, {"seeds": [0, 1], "acc": 0.5})
    assert again["sha256"] == entry["sha256"]                     # 同样的内容，同样的字节
    path = tmp_path / "demo.pt"
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(checkpoints.CheckpointError, match="SHA-256"):
        checkpoints.load("demo")
    with pytest.raises(checkpoints.CheckpointError, match="没有名为"):
        checkpoints.load("nope")
    with pytest.raises(ValueError, match="名字"):
        checkpoints.save("a/b", {"w": w}, {})


def test_jobs_saving_in_parallel_keep_every_manifest_entry(tmp_path, monkeypatch):
    """make checkpoints 的作业可以并行跑：同时写完的作业不能互相覆盖 manifest.json 里的条目。"""
    import threading

    monkeypatch.setattr(checkpoints, "DIRECTORY", tmp_path)
    monkeypatch.setattr(checkpoints, "MANIFEST", tmp_path / "manifest.json")
    names = [f"job{i:02d}" for i in range(24)]
    start = threading.Barrier(len(names))

    def job(i, n):
        start.wait()                                   # 同时开始，同时写 manifest
        checkpoints.save(n, {"w": torch.ones(8, 8) * i}, {"i": i})

    threads = [threading.Thread(target=job, args=(i, n)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert checkpoints.names() == names
    for n in names:
        checkpoints.load(n)
