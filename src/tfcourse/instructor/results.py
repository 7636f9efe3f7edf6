"""读学生进程写下的 result.json 与 result.npz：它们是不可信的输入。

学生代码和写结果的 runner 在同一个进程里，它可以把结果文件换成任何东西：截断的、符号链接、FIFO、
声明了巨大形状的数组、展开后有几个 G 的压缩成员、object 数组、很深的嵌套、多出来的成员……
这里每一步都有上限：文件大小、成员个数与名字、每个成员声明的与实际解压出来的字节数（边读边数，不信文件头）、
dtype 只许布尔、整数和浮点、形状与字节数对得上、总字节数不超过期望输出所需的若干倍；JSON 只许规定的结构，
数值只许普通的数。出了任何问题都抛出 BadResult（从不抛别的异常），由调用方记为「结果文件无效」。
"""
from __future__ import annotations

import io
import json
import os
import re
import stat
import zipfile

import numpy as np

MAX_DEPTH = 6                     # runner 编码返回值最多嵌套 4 层
MAX_TEXT = 600                    # 报告里任何一段文字
MAX_ITEMS = 4096                  # 报告里任何一个列表
MEMBER = re.compile(r"a\d{1,6}\.npy")
STATUSES = {"ok", "not_implemented", "error"}
CAPS = {"memory", "procs", "file_size", "cpu"}


class BadResult(Exception):
    """结果文件不可用：缺失、过大、格式不对。"""


def read_bounded(path, limit: int) -> bytes:
    """只读普通文件（不跟随符号链接、不在 FIFO 上卡住），最多 limit 字节，超过就抛出 BadResult。"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BadResult(f"打不开（{exc.strerror}）") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadResult("不是普通文件")
        if st.st_size > limit:
            raise BadResult(f"文件过大（{st.st_size} 字节）")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise BadResult("文件过大")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _parse_npy(raw: bytes) -> np.ndarray:
    f = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=2000)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=2000)
        else:
            raise BadResult("数组版本不对")
    except BadResult:
        raise
    except Exception:
        raise BadResult("数组头损坏") from None
    if not isinstance(dtype, np.dtype) or dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None \
            or dtype.kind not in "biuf" or dtype.itemsize > 16:
        raise BadResult(f"数组的 dtype 不是普通的数（{dtype}）")
    if not isinstance(shape, tuple) or len(shape) > 8 or not all(type(n) is int and n >= 0 for n in shape):
        raise BadResult("数组的形状不对")
    count = 1
    for n in shape:
        count *= n
    offset = f.tell()
    if count * dtype.itemsize != len(raw) - offset:
        raise BadResult("数组的形状与数据长度对不上")
    arr = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
    return arr.reshape(shape[::-1]).transpose() if fortran else arr.reshape(shape)


def load_arrays(path, max_members: int, max_bytes: int) -> dict[str, np.ndarray]:
    """result.npz → {名字: 数组}。成员最多 max_members 个，全部数组合计最多 max_bytes 字节。"""
    data = read_bounded(path, max_bytes + 512 * (max_members + 1) + 4096)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except Exception:
        raise BadResult("不是完整的 npz（zip）文件") from None
    if len(infos) > max_members:
        raise BadResult(f"数组太多（{len(infos)} 个）")
    arrays: dict[str, np.ndarray] = {}
    budget = max_bytes
    for info in infos:
        if not MEMBER.fullmatch(info.filename) or info.filename[:-4] in arrays:
            raise BadResult("数组的名字不对")
        if info.file_size > budget + 4096:
            raise BadResult("数组太大")
        try:
            with zf.open(info) as member:
                raw = member.read(budget + 4096 + 1)       # 边解压边数：不信 zip 头里声明的大小
        except BadResult:
            raise
        except Exception:
            raise BadResult("npz 里的数组读不出来") from None
        if len(raw) > budget + 4096:
            raise BadResult("数组太大")
        arr = _parse_npy(raw)
        budget -= arr.nbytes
        if budget < 0:
            raise BadResult("数组合计太大")
        arrays[info.filename[:-4]] = arr
    return arrays


def _text(value) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _value(node, depth: int = 0) -> dict:
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        raise BadResult("返回值的编码不对")
    kind = node.get("k")
    if kind == "none":
        return {"k": "none"}
    if kind in ("tuple", "list"):
        items = node.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise BadResult("返回值的编码不对")
        return {"k": kind, "items": [_value(n, depth + 1) for n in items]}
    if kind == "array":
        key = node.get("key")
        if not isinstance(key, str) or not re.fullmatch(r"a\d{1,6}", key):
            raise BadResult("返回值的编码不对")
        return {"k": "array", "key": key}
    if kind == "other":
        return {"k": "other", "type": _text(node.get("type"))[:80] or "?"}
    raise BadResult("返回值的编码不对")


def load_report(path, exercises: dict[str, int], limit: int) -> dict:
    """result.json → 只含规定字段的报告。exercises：练习编号 → 用例个数（多出来的练习与用例不要）。"""
    raw = read_bounded(path, limit)
    try:
        report = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadResult("不是有效的 JSON") from None
    if not isinstance(report, dict) or not isinstance(report.get("cells", []), list) \
            or not isinstance(report.get("exercises", {}), dict):
        raise BadResult("结构不对")
    cells = []
    for item in report.get("cells", [])[:MAX_ITEMS]:
        if not isinstance(item, dict) or type(item.get("cell")) is not int or not 0 <= item["cell"] < 100_000:
            raise BadResult("单元的记录不对")
        clean = {"cell": item["cell"], "problem": "syntax" if item.get("problem") == "syntax" else "error",
                 "error": _text(item.get("error"))}
        if isinstance(item.get("hint"), str):
            clean["hint"] = _text(item["hint"])
        if item.get("cap") in CAPS:
            clean["cap"] = item["cap"]
        cells.append(clean)
    out = {"cells": cells, "exercises": {}, "output_capped": report.get("output_capped") is True}
    for eid, n_cases in exercises.items():
        got = report["exercises"].get(eid)
        if got is None:
            continue
        if not isinstance(got, dict) or not isinstance(got.get("cases", []), list):
            raise BadResult("练习的记录不对")
        outcomes = []
        for outcome in got.get("cases", [])[:n_cases]:
            if not isinstance(outcome, dict) or outcome.get("status") not in STATUSES:
                raise BadResult("用例的记录不对")
            clean = {"status": outcome["status"]}
            if outcome["status"] == "ok":
                clean["value"] = _value(outcome.get("value"))
            elif outcome["status"] == "error":
                clean["error"] = _text(outcome.get("error")) or "错误"
                if isinstance(outcome.get("hint"), str):
                    clean["hint"] = _text(outcome["hint"])
                if outcome.get("cap") in CAPS:
                    clean["cap"] = outcome["cap"]
            seconds = outcome.get("seconds", 0.0)
            clean["seconds"] = float(seconds) if type(seconds) in (int, float) and 0 <= seconds < 1e6 else 0.0
            outcomes.append(clean)
        out["exercises"][eid] = {"missing": got.get("missing") is True, "cases": outcomes}
    return out


def expected_budget(expected_values) -> tuple[int, int]:
    """由期望输出算出 npz 的上限：(成员个数, 合计字节数)。答错的形状与 dtype（float64、int64）也放得下，
    再多就不是这道题的答案了。"""
    members, nbytes = 0, 0

    def walk(v):
        nonlocal members, nbytes
        if isinstance(v, (tuple, list)) and not (v and all(isinstance(x, (int, float, bool)) for x in v)):
            for x in v:
                walk(x)
            return
        members += 1
        try:
            nbytes += int(np.asarray(v).size) * 8
        except Exception:
            nbytes += 8
    for v in expected_values:
        walk(v)
    return 4 * members + 64, 16 * nbytes + (8 << 20)
