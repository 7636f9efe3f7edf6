"""课程自己训练的模型：随课程包一起发布的检查点（checkpoint），每个都带 SHA-256 与训练记录。

有些结果在一章 180 秒的预算里训练不出来（多个模型 × 多个种子），所以由仓库里的一条命令
`make checkpoints`（即 `python tools/checkpoints.py`）训练，写进这个目录：

- `NAME.pt`：`torch.save({"state": state_dict, "meta": meta})`，meta 只含字符串、数和列表/字典
  （超参数、字表、每个种子的训练记录、训练时在留出数据上测得的数字）；
- `manifest.json`：每个检查点的文件名、字节数、SHA-256 与生成它的命令。

章节用 `load(name)` 读取（先核对 SHA-256），再在读者面前重新测一遍；`tests/` 里的测试也这样做，
确认重新载入的模型仍然达到记录的数字。
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
from pathlib import Path

import torch

__all__ = ["CheckpointError", "DIRECTORY", "manifest", "load", "save", "names"]

DIRECTORY = Path(__file__).resolve().parent
MANIFEST = DIRECTORY / "manifest.json"
COMMAND = "make checkpoints"


class CheckpointError(RuntimeError):
    """检查点缺失、被改动，或名字不对。"""


def manifest() -> dict:
    """manifest.json 的内容：{名字: {"file", "bytes", "sha256", "command"}}。"""
    if not MANIFEST.is_file():
        return {}
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def names() -> list[str]:
    return sorted(manifest())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(name: str) -> tuple[dict, dict]:
    """读取检查点 name，核对 SHA-256，返回 (state_dict, meta)。"""
    entries = manifest()
    if name not in entries:
        have = "、".join(sorted(entries)) or "（一个也没有）"
        raise CheckpointError(f"没有名为 {name!r} 的检查点。已有的检查点：{have}。")
    entry = entries[name]
    path = DIRECTORY / entry["file"]
    if not path.is_file():
        raise CheckpointError(
            f"找不到检查点文件 {path}。请重新安装课程包（pip install -e .），"
            f"或在仓库根目录运行 `{COMMAND}` 重新训练（需要几十分钟）。"
        )
    data = path.read_bytes()
    got = _sha256(data)
    if got != entry["sha256"]:
        raise CheckpointError(
            f"检查点 {path.name} 的 SHA-256 是 {got[:16]}…，manifest.json 记录的是 {entry['sha256'][:16]}…："
            f"文件被改动过或没有下载完整。请重新取得仓库里的这个文件，或运行 `{COMMAND}` 重新生成。"
        )
    blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    return blob["state"], blob["meta"]


def _plain(value):
    """meta 只许有 JSON 能表示的东西（weights_only 载入也只认这些）。"""
    return json.loads(json.dumps(value, ensure_ascii=False))


def save(name: str, state: dict, meta: dict) -> dict:
    """写 NAME.pt 并更新 manifest.json（供 tools/checkpoints.py 使用）。返回该检查点的 manifest 条目。"""
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"检查点名字只能含字母、数字、- 和 _，实际得到 {name!r}。")
    state = {k: v.detach().cpu().contiguous().clone() for k, v in state.items()}
    buffer = io.BytesIO()
    torch.save({"state": state, "meta": _plain(meta)}, buffer)
    data = buffer.getvalue()
    path = DIRECTORY / f"{name}.pt"
    path.write_bytes(data)
    entry = {"file": path.name, "bytes": len(data), "sha256": _sha256(data), "command": COMMAND}
    # 几个作业可以并行训练：读-改-写 manifest.json 时加锁，免得同时写完的两个作业丢掉对方的条目
    with open(DIRECTORY / ".manifest.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = manifest()
        entries[name] = entry
        tmp = MANIFEST.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(dict(sorted(entries.items())), ensure_ascii=False, indent=1) + "\n",
                       encoding="utf-8")
        tmp.replace(MANIFEST)
    return entry
