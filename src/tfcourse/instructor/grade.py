"""tfcourse grade：用教师的秘密种子生成隐藏用例，逐份运行提交，写 grades.csv、中文反馈和 Gradescope 结果。

每道练习的用例 = 公开用例（学生在笔记本里用 check() 看得到的）+ 由 --seed 生成的隐藏用例；
期望输出由参考实现在教师端的进程里算出，从不写进学生进程能读到的地方。一道练习的所有用例都通过才得分
（与 check() 的"通过"一致；隐藏用例的种类每个种子都一样，只有数值不同，所以同样的答案在任何种子下得分相同）。
"""
from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import os
import pathlib
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .chapters import Chapter, InstructorError, load_chapter, solved_notebook
from .results import BadResult, expected_budget, load_arrays, load_report
from .sandbox import UIDS, Limits, Sandbox, child_env, detect, format_size, interpreter_paths, package_source

MAX_LISTED_FAILURES = 3
MAX_NOTEBOOK = 50 << 20            # 比这大的"笔记本"不评
OUTPUT_TAIL = 64 << 10             # 评分进程的输出只留最后这么多（给教师排查用）
INVALID = "结果文件无效"


def cap_notes(limits: Limits) -> dict[str, str]:
    """上限的中文名字（写进备注与反馈）。"""
    return {"memory": f"内存超限（上限 {format_size(limits.memory)}）",
            "procs": f"进程数超限（上限 {limits.procs} 个进程与线程）",
            "file_size": f"文件过大（单个文件上限 {format_size(limits.file_size)}）",
            "cpu": f"CPU 时间超限（上限 {limits.cpu} 秒）",
            "output": f"输出过多（上限 {format_size(limits.output)}）"}


def exercise_rng(seed: str, exercise_id: str) -> np.random.Generator:
    """每道练习一个随机数生成器：由秘密种子和练习编号决定（换一道题、换一个种子都得到不同的用例）。"""
    digest = hashlib.sha256(f"{seed}\0{exercise_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


@dataclass
class GradingCase:
    args: tuple
    description: str
    hidden: bool
    expected: object
    spread: object = None         # float32 舍入能让期望输出移动多少（与 check() 的容差一致）


def grading_cases(exercise_id: str, seed: str) -> list[GradingCase]:
    """公开用例 + 隐藏用例，期望输出与容差（float32 舍入量出的移动量）由参考实现算出，和 check() 的算法相同。"""
    from ..exercises import EXERCISES, float32_spread

    ex = EXERCISES[exercise_id]
    generate = getattr(ex, "generate", None)
    if generate is None:
        raise InstructorError(f"练习 {exercise_id} 没有隐藏用例生成器（Exercise.generate）：不能保密评分。")
    cases = [(c, False) for c in ex.cases] + [(c, True) for c in generate(exercise_rng(seed, exercise_id))]
    out = []
    for i, (c, hidden) in enumerate(cases, start=1):
        expected = ex.reference(*copy.deepcopy(c.args))
        out.append(GradingCase(c.args, c.description, hidden, expected,
                               float32_spread(ex.reference, c.args, expected, seed=i)))
    return out


# ------------------------------------------------------------------ 结果的解码与比对

class _Other:
    def __init__(self, type_name: str):
        self.type_name = type_name


def _decode(node, arrays):
    kind = node.get("k")
    if kind == "none":
        return None
    if kind in ("tuple", "list"):
        items = [_decode(n, arrays) for n in node.get("items", [])]
        return tuple(items) if kind == "tuple" else items
    if kind == "array":
        return arrays[node["key"]]
    return _Other(str(node.get("type", "?")))


def _plain(value):
    from ..exercises import _plain as plain

    return plain(value)


def _compare(case: GradingCase, got, ex) -> bool:
    """与 check() 用同一个比较（同样的容差）：返回 True 表示一致。"""
    from ..exercises import _compare as compare

    if _contains_other(got):
        return False
    return compare(case.expected, got, ex.atol, ex.rtol, case.spread) is None


def _contains_other(value) -> bool:
    if isinstance(value, _Other):
        return True
    if isinstance(value, (tuple, list)):
        return any(_contains_other(v) for v in value)
    return False


def explain(expected, got, atol: float = 0.0, rtol: float = 0.0, spread=None) -> str:
    """不对时的中文说明——不透露输入和期望的数值，只说错在哪一类（返回值个数、dtype、形状、NaN、数值）。"""
    expected = _plain(expected)
    if got is None:
        return "函数返回了 None（是不是忘了写 return？）"
    if isinstance(got, _Other):
        return f"函数返回了 {got.type_name}，无法当作数值比较"
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"应返回 {len(expected)} 个结果组成的元组"
        spreads = spread if isinstance(spread, tuple) else (None,) * len(expected)
        for n, (e, g, sp) in enumerate(zip(expected, got, spreads), start=1):
            if _contains_other(g) or _differs(e, g, atol, rtol, sp):
                return f"第 {n} 个返回值：{explain(e, g, atol, rtol, sp)}"
        return "结果与期望的不同"
    return _explain_item(expected, got) or "结果与期望的不同"


def _differs(expected, got, atol, rtol, spread) -> bool:
    from ..exercises import _compare as compare

    return compare(expected, got, atol, rtol, spread) is not None


def _explain_item(expected, got) -> str | None:
    if isinstance(got, _Other):
        return f"函数返回了 {got.type_name}，无法当作数值比较"
    exp = np.asarray(expected)
    try:
        arr = np.asarray(got)
        if exp.dtype == np.bool_ and arr.dtype != np.bool_:
            return f"应返回布尔值（True/False），你返回的 dtype 是 {arr.dtype}"
        arr = arr.astype(np.float64)
    except (TypeError, ValueError):
        return f"函数返回了 {type(got).__name__}，无法当作数值比较"
    exp = exp.astype(np.float64)
    if arr.shape != exp.shape:
        return f"形状与期望的不同（期望 {exp.ndim} 维，你返回的是 {arr.ndim} 维、形状 {arr.shape}）" \
            if arr.ndim != exp.ndim else f"形状与期望的不同（你返回的形状是 {arr.shape}）"
    if not np.all(np.isfinite(arr)):
        return "结果里出现了 NaN 或无穷大（数值溢出？一整行被掩码屏蔽时出现了 0/0？）"
    if arr.size and not np.allclose(arr, exp, rtol=0, atol=0):
        diff = float(np.abs(arr - exp).max())
        return f"数值与期望的不同（最大差 {diff:.2g}）"
    return None


# ------------------------------------------------------------------ 一份提交

@dataclass
class ExerciseResult:
    id: str
    title: str
    points: float
    earned: float
    passed_public: int = 0
    n_public: int = 0
    passed_hidden: int = 0
    n_hidden: int = 0
    problems: list[str] = field(default_factory=list)
    status: str = ""              # 通过 / 未通过 / 未作答 / 未找到函数 / 未运行 / 未完成（评分进程在这道题之前停下）


@dataclass
class SubmissionResult:
    student: str
    file: str
    exercises: list[ExerciseResult]
    notes: list[str]
    seconds: float
    cell_problems: list[str] = field(default_factory=list)
    log: str = ""                 # 评分进程没有正常结束时，它输出的最后几行（给教师排查用）

    @property
    def score(self) -> float:
        return sum(e.earned for e in self.exercises)

    @property
    def max_score(self) -> float:
        return sum(e.points for e in self.exercises)


def _not_run(ch: Chapter, status: str) -> list[ExerciseResult]:
    return [ExerciseResult(s.id, s.title, s.points, 0.0, status=status) for s in ch.exercises]


def _is_notebook(path: pathlib.Path) -> str | None:
    """是 Jupyter 笔记本就返回 None，否则返回原因。"""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return "文件损坏：不是 Jupyter 笔记本（读不出 JSON）"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return "文件损坏：不是 Jupyter 笔记本（没有 cells）"
    return None


def _run_process(cmd, env, workdir, timeout, max_output: int) -> tuple[str, float, bytes, int]:
    """运行学生进程，输出经管道读进来（只留最后 OUTPUT_TAIL 字节）。
    返回 (状态, 秒数, 输出的末尾, 退出码)；状态是 ok、crash、timeout 或 output（输出超过 max_output，已杀掉）。
    超时与输出过多都杀掉整个进程组（沙箱里 bwrap 带着整个 PID 命名空间一起结束）。"""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    tail = bytearray()
    total = 0
    flooded = threading.Event()

    def kill():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def drain():
        nonlocal total, tail
        while True:
            chunk = proc.stdout.read1(1 << 16)
            if not chunk:
                return
            total += len(chunk)
            tail += chunk
            if len(tail) > 2 * OUTPUT_TAIL:
                del tail[:-OUTPUT_TAIL]
            if total > max_output and not flooded.is_set():
                flooded.set()
                kill()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    state = None
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill()
        rc = proc.wait()
        state = "timeout"
    reader.join(timeout=5)
    if reader.is_alive():          # 还有进程拿着输出管道：整个进程组杀掉
        kill()
        reader.join(timeout=5)
    proc.stdout.close()
    if state is None:
        state = "output" if flooded.is_set() else ("ok" if rc == 0 else "crash")
    return state, time.perf_counter() - start, bytes(tail[-OUTPUT_TAIL:]), rc


def _signal_of(rc: int) -> int | None:
    """被信号杀掉的进程：直接运行时退出码是 -信号；bwrap 里是 128+信号。"""
    if rc < 0:
        return -rc
    if 128 < rc < 128 + 65:
        return rc - 128
    return None


def _crash_cap(rc: int, log: str, seconds: float, limits: Limits) -> str | None:
    """评分进程没有写出结果就结束时，是撞上了哪个上限（看退出信号与输出的最后几行）。"""
    sig = _signal_of(rc)
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and seconds >= limits.cpu):
        return "cpu"
    if sig == signal.SIGXFSZ:
        return "file_size"
    last = "\n".join(log.strip().splitlines()[-5:])
    if "MemoryError" in last or "can't allocate memory" in last or "Cannot allocate memory" in last \
            or "std::bad_alloc" in last:
        return "memory"
    if "Resource temporarily unavailable" in last or "can't start new thread" in last:
        return "procs"
    if "File too large" in last:
        return "file_size"
    return None


def _outside(path: pathlib.Path, folder: pathlib.Path | None) -> bool:
    """提交是符号链接（或经过符号链接），指到提交文件夹之外。"""
    if folder is None:
        return path.is_symlink()
    try:
        path.resolve().relative_to(pathlib.Path(folder).resolve())
    except (ValueError, OSError, RuntimeError):
        return True
    return False


def grade_one(ch: Chapter, cases: dict[str, list[GradingCase]], job_bytes: bytes, student: str,
              path: pathlib.Path, sandbox: Sandbox, timeout: float, limits: Limits | None = None,
              folder: pathlib.Path | None = None) -> SubmissionResult:
    from ..exercises import EXERCISES

    limits = limits or Limits()
    caps = cap_notes(limits)
    start = time.perf_counter()
    if _outside(path, folder):
        return SubmissionResult(student, path.name, _not_run(ch, "未运行"),
                                ["提交是指向提交文件夹之外的符号链接，没有评分"], 0.0)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size > MAX_NOTEBOOK:
        return SubmissionResult(student, path.name, _not_run(ch, "未运行"),
                                [f"文件过大（{size >> 20} MB），不是正常的笔记本，没有评分"], 0.0)
    broken = _is_notebook(path)
    if broken:
        return SubmissionResult(student, path.name, _not_run(ch, "未运行"), [broken], 0.0)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="tfcourse-grade-"))
    uid = UIDS.take() if sandbox.switches_uid else None
    n_cases = {s.id: len(cases[s.id]) for s in ch.exercises}
    members, max_bytes = expected_budget([c.expected for s in ch.exercises for c in cases[s.id]])
    try:
        shutil.copyfile(path, workdir / "submission.ipynb")
        (workdir / "cases.pkl").write_bytes(job_bytes)
        if uid is not None:                # 学生进程换成无特权的 uid：只有工作目录归它
            os.chown(workdir, uid, uid)
        cmd = sandbox.command([sys.executable, "-m", "tfcourse.instructor.runner", str(workdir)], workdir, uid)
        state, seconds, tail, rc = _run_process(cmd, child_env(workdir), workdir, timeout, limits.output)
        log_lines = tail.decode("utf-8", errors="replace").strip().splitlines()
        log = "\n".join(line[:300] for line in log_lines[-12:])
        # 没有正常结束时为什么停下（runner 每做完一道题就写一次结果：做完的题照样评分，没做完的才丢分）
        stopped = None
        if state == "timeout":
            stopped = f"超时（超过 {timeout:g} 秒）"
        elif state == "output":
            stopped = caps["output"] + "，评分进程已停止"
        elif state != "ok":
            cap = _crash_cap(rc, log, seconds, limits)
            if cap:
                stopped = caps[cap] + "，评分进程被停止"
            else:
                why = f"：{log_lines[-1][:200]}" if log_lines else ""
                stopped = f"评分进程没有正常结束{why}"
        has_result = (workdir / "result.json").exists() or (workdir / "result.json").is_symlink()
        if not has_result and stopped:
            status = "超时" if state == "timeout" else "未运行"
            return SubmissionResult(student, path.name, _not_run(ch, status), [stopped + "，没有得到结果"], seconds,
                                    log=log)
        try:
            report = load_report(workdir / "result.json", n_cases, 4 << 20)
            arrays = load_arrays(workdir / "result.npz", members, max_bytes)
        except BadResult as exc:
            return SubmissionResult(student, path.name, _not_run(ch, INVALID),
                                    [f"{INVALID}（{exc}）"], seconds, log=log)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if uid is not None:
            UIDS.give(uid)

    notes, cell_problems = ([stopped] if stopped else []), []
    if report.get("output_capped"):
        notes.append(caps["output"] + "，多出的部分没有保留")
    for item in report.get("cells", []):
        where = f"第 {item['cell'] + 1} 个单元"
        if item.get("problem") == "syntax":
            cell_problems.append(f"{where}无法解析（{item.get('error', '')}），已跳过")
        else:
            cell_problems.append(f"{where}出错：{item.get('hint') or item.get('error', '')}")
        if item.get("cap"):
            notes.append(caps[item["cap"]])
    if any("无法解析" in p for p in cell_problems):
        notes.append("有单元无法解析")

    results = []
    for spec in ch.exercises:
        ex = EXERCISES[spec.id]
        res = ExerciseResult(spec.id, spec.title, spec.points, 0.0,
                             n_public=sum(not c.hidden for c in cases[spec.id]),
                             n_hidden=sum(c.hidden for c in cases[spec.id]))
        got = report.get("exercises", {}).get(spec.id)
        if got is None:                   # 评分进程在做到这道题之前就停下了（或结果里没有它）
            res.status = "未完成"
            res.problems.append((stopped or "评分进程没有给出这道题的结果") + "，这道题没有做完")
            results.append(res)
            continue
        if got.get("missing"):
            res.status = "未找到函数"
            res.problems.append(f"笔记本里没有定义函数 {spec.function}")
            notes.append(f"未找到函数 {spec.function}")
            results.append(res)
            continue
        outcomes = got.get("cases", [])
        n_hidden_seen = n_public_seen = 0
        not_implemented = 0
        for case, outcome in zip(cases[spec.id], outcomes):
            if case.hidden:
                n_hidden_seen += 1
                label = f"隐藏用例 {n_hidden_seen}（{case.description}）"
            else:
                n_public_seen += 1
                label = f"公开用例 {n_public_seen}（{case.description}）"
            status = outcome.get("status")
            ok = False
            if status == "ok":
                try:
                    value = _decode(outcome.get("value", {"k": "other"}), arrays)
                    ok = _compare(case, value, ex)
                    problem = None if ok else explain(case.expected, value, ex.atol, ex.rtol, case.spread)
                except Exception:         # 结果文件里缺这个数组，或它没法和期望比较
                    ok, problem = False, INVALID
                    notes.append(INVALID)
            elif status == "not_implemented":
                not_implemented += 1
                problem = "函数还没有实现（NotImplementedError）"
            else:
                problem = outcome.get("hint") or f"函数抛出了 {outcome.get('error', '错误')}"
                if outcome.get("cap"):
                    problem += f"（{caps[outcome['cap']]}）"
                    notes.append(caps[outcome["cap"]])
            if ok:
                if case.hidden:
                    res.passed_hidden += 1
                else:
                    res.passed_public += 1
            else:
                res.problems.append(f"{label}：{problem}")
        passed = res.passed_public + res.passed_hidden == res.n_public + res.n_hidden and len(outcomes) == len(cases[spec.id])
        res.earned = spec.points if passed else 0.0
        res.status = "通过" if passed else ("未作答" if not_implemented == len(outcomes) else "未通过")
        results.append(res)
    if all(r.status == "未作答" for r in results):
        notes.append("未作答")
    return SubmissionResult(student, path.name, results, list(dict.fromkeys(notes)), time.perf_counter() - start,
                            cell_problems)


# ------------------------------------------------------------------ 一个班

def submission_files(folder: pathlib.Path) -> list[pathlib.Path]:
    """文件夹（含子文件夹）里的每个文件都算一份提交；隐藏文件和 .ipynb_checkpoints 除外。"""
    files = []
    for p in sorted(pathlib.Path(folder).rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            files.append(p)
    return files


def student_ids(files: list[pathlib.Path], folder: pathlib.Path, id_regex: str | None) -> list[str]:
    """学号：默认是文件名去掉扩展名；给了 --id-regex 就在相对路径上搜索，取命名组 id 或第 1 组。重复的加 -2、-3。"""
    pattern = re.compile(id_regex) if id_regex else None
    ids, seen = [], {}
    for p in files:
        rel = p.relative_to(folder).as_posix()
        sid = p.stem
        if pattern is not None:
            m = pattern.search(rel)
            if m:
                sid = m.groupdict().get("id") or (m.group(1) if m.groups() else m.group(0))
        sid = re.sub(r"[^\w.\-]+", "_", sid) or "submission"
        seen[sid] = seen.get(sid, 0) + 1
        ids.append(sid if seen[sid] == 1 else f"{sid}-{seen[sid]}")
    return ids


@dataclass
class ClassResult:
    chapter: Chapter
    rows: list[SubmissionResult]
    sandbox: Sandbox
    seconds: float
    key_seconds: float = 0.0      # 先评答案卷用了几秒
    limits: Limits = field(default_factory=Limits)

    @property
    def n_full(self) -> int:
        return sum(r.score == r.max_score for r in self.rows)


def grade_class(chapter: str, submissions: pathlib.Path, out: pathlib.Path, seed: str, jobs: int = 2,
                timeout: float = 60.0, id_regex: str | None = None, book: pathlib.Path | None = None,
                manifest: pathlib.Path | None = None, unsafe_no_sandbox: bool = False,
                limits: Limits | None = None) -> ClassResult:
    """给一个文件夹里的全部提交评分，写 out/grades.csv、feedback/ 与 results/。

    先在同一个沙箱、同样的设置下评这一章的答案卷：它不是满分（沙箱挡住了 Python、缺包、超时……）就抛出
    InstructorError，一个成绩也不写。没有能用的 bubblewrap 时同样抛出，除非 unsafe_no_sandbox=True。
    limits：每份提交的资源上限（默认 Limits()）；撞上上限的提交只丢没做完的部分，备注写明是哪个上限。
    """
    limits = limits or Limits()
    start = time.perf_counter()
    points, names = None, None
    if manifest is not None:
        data = json.loads(pathlib.Path(manifest).read_text(encoding="utf-8"))
        points = {e["id"]: e.get("points", 1) for e in data.get("exercises", [])}
        names = {e["id"]: e["function"] for e in data.get("exercises", [])}
    ch = load_chapter(chapter, book, points)
    if names:
        ch.exercises = [s.__class__(**{**s.__dict__, "function": names.get(s.id, s.function)}) for s in ch.exercises]
    submissions, out = pathlib.Path(submissions), pathlib.Path(out)
    if not submissions.is_dir():
        raise InstructorError(f"找不到提交文件夹 {submissions}。")
    files = submission_files(submissions)
    if not files:
        raise InstructorError(f"提交文件夹 {submissions} 里没有文件。")
    ids = student_ids(files, submissions, id_regex)

    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)              # 参考实现都是小张量：单线程更快，也不和 --jobs 个学生进程抢核
    try:
        cases = {s.id: grading_cases(s.id, seed) for s in ch.exercises}
    finally:
        torch.set_num_threads(threads)
    sandbox = detect(unsafe_no_sandbox, hidden=_hideable([submissions, out]))
    # 进程数上限只在沙箱里设：那里它只数这份提交的进程（换了 uid，或在 bwrap 的用户命名空间里）；
    # 没有沙箱时它会数上你自己的全部进程
    caps = {k: v for k, v in limits.as_dict().items() if k != "procs" or sandbox.active}
    job = {"exercises": {s.id: {"function": s.function, "cases": [c.args for c in cases[s.id]]}
                         for s in ch.exercises}, "limits": caps}
    job_bytes = pickle.dumps(job)
    key = check_answer_key(ch, cases, job_bytes, sandbox, timeout, limits)

    def one(student: str, path: pathlib.Path) -> SubmissionResult:
        try:
            return grade_one(ch, cases, job_bytes, student, path, sandbox, timeout, limits, submissions)
        except Exception as exc:          # 一份提交出了任何意外，也只丢这一份：全班的成绩照样写出
            return SubmissionResult(student, path.name, _not_run(ch, "未运行"),
                                    [f"评分这份提交时出错（{type(exc).__name__}），没有评分"], 0.0)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        rows = list(pool.map(lambda a: one(*a), zip(ids, files)))
    result = ClassResult(ch, rows, sandbox, time.perf_counter() - start, key.seconds, limits)
    write_outputs(result, out)
    return result


def check_answer_key(ch: Chapter, cases: dict[str, list[GradingCase]], job_bytes: bytes, sandbox: Sandbox,
                     timeout: float, limits: Limits | None = None) -> SubmissionResult:
    """在评全班之前，用同一个沙箱、同样的用例和超时评这一章的答案卷；不是满分就抛出 InstructorError。"""
    with tempfile.TemporaryDirectory(prefix="tfcourse-key-") as tmp:
        path = pathlib.Path(tmp) / ch.filename
        path.write_text(json.dumps(solved_notebook(ch), ensure_ascii=False), encoding="utf-8")
        key = grade_one(ch, cases, job_bytes, "答案卷", path, sandbox, timeout, limits, pathlib.Path(tmp))
    if key.score == key.max_score:
        return key
    lines = [f"答案卷（{ch.filename} 的参考答案）在评分环境里只得了 {_fmt(key.score)} / {_fmt(key.max_score)} 分，"
             "这样评出的成绩不可信，所以没有评分，也没有写出任何文件。",
             f"评分环境：{'bubblewrap 沙箱' if sandbox.active else '没有沙箱'}；Python：{sys.executable}。",
             "答案卷遇到的问题："]
    problems = key.notes + key.cell_problems[:5]
    for r in key.exercises:
        if r.status != "通过":
            problems += [f"{r.id}（{r.status}）：{p}" for p in _distinct(r.problems)[:2]]
    lines += [f"  - {p}" for p in list(dict.fromkeys(problems))[:12]]
    if key.log:
        lines += ["评分进程输出的最后几行：", *(f"  | {ln}" for ln in key.log.splitlines())]
    text = "\n".join(lines + [""])
    hints = []
    if "execvp" in text or "No such file or directory" in text:
        hints.append(f"沙箱里看不到评分用的 Python（{sys.executable}）或课程包（{package_source()}）："
                     "它们是不是放在提交文件夹或输出文件夹里（这两个文件夹在沙箱里被盖住）？把提交与输出放到别处再试")
    if "ModuleNotFoundError" in text or "No module named" in text:
        hints.append(f"评分用的 Python（{sys.executable}）缺少这一章要用的包（或沙箱看不到装包的地方）："
                     "在它里面 pip install 缺的包，或装上课程的 requirements.txt")
    if any(r.status == "超时" or any(p.startswith("超时") for p in r.problems) for r in key.exercises):
        hints.append(f"答案卷超时（--timeout {timeout:g} 秒）：机器太忙或太慢时调大 --timeout")
    flags = [flag for word, flag in (("内存超限", "--memory"), ("进程数超限", "--max-procs"), ("文件过大", "--max-file-size"),
                                     ("CPU 时间超限", "--max-cpu"), ("输出过多", "--max-output")) if word in text]
    if flags:
        hints.append(f"答案卷撞上了资源上限：调大 {'、'.join(flags)}（默认值见 tfcourse grade --help）")
    if not hints:
        hints.append("评分环境与写答案的环境不一致（包的版本、课程包的版本），或章节笔记本与练习登记对不上")
    lines += ["可能的原因：", *(f"  - {h}" for h in hints)]
    raise InstructorError("\n".join(lines))


def _hideable(paths: list[pathlib.Path]) -> list[pathlib.Path]:
    """沙箱里要盖住的文件夹——但不能盖住 Python 自己、课程包和临时目录所在的地方。"""
    needed = interpreter_paths() + [pathlib.Path(sys.executable).resolve(),
                                    pathlib.Path(tempfile.gettempdir()).resolve()]
    keep = []
    for p in paths:
        p = pathlib.Path(p).resolve()
        if not any(n == p or p in n.parents for n in needed):
            keep.append(p)
    return keep


# ------------------------------------------------------------------ 输出

def _fmt(x: float) -> str:
    return f"{x:g}"


def unconfined_note(sandbox: Sandbox | None) -> str | None:
    """没有沙箱时写进每份反馈与 Gradescope 结果的一句话；有沙箱时是 None。"""
    if sandbox is None or sandbox.active:
        return None
    return (f"⚠ 这次评分没有使用沙箱：你的代码直接在老师的电脑上运行（{sandbox.reason}）。"
            "得分的算法与有沙箱时相同。")


def feedback_markdown(ch: Chapter, row: SubmissionResult, sandbox: Sandbox | None = None) -> str:
    lines = [f"# {ch.key} 评分反馈：{row.student}", "",
             f"总分：**{_fmt(row.score)} / {_fmt(row.max_score)}**（文件 {row.file}）", ""]
    if unconfined_note(sandbox):
        lines += [unconfined_note(sandbox), ""]
    if row.notes:
        lines += [f"说明：{'；'.join(row.notes)}", ""]
    lines += ["每道练习用两组用例评分：公开用例就是你在笔记本里用 `check()` 看到的那些；隐藏用例由老师的种子随机生成，"
              "形状与边界情况和题目说的一致。一道题的所有用例都通过才得分。", ""]
    for r in row.exercises:
        mark = "✅" if r.status == "通过" else "❌"
        lines.append(f"## {mark} {r.id}：{r.title}")
        lines.append("")
        lines.append(f"- 得分：{_fmt(r.earned)} / {_fmt(r.points)}（{r.status}）")
        if r.n_public + r.n_hidden and r.status not in ("未找到函数", "超时", "未运行", "未完成", INVALID):
            lines.append(f"- 公开用例通过 {r.passed_public}/{r.n_public}，隐藏用例通过 {r.passed_hidden}/{r.n_hidden}")
        shown = _distinct(r.problems) if r.status != "未作答" else r.problems[:1]
        for p in shown[:MAX_LISTED_FAILURES]:
            lines.append(f"- {p}")
        if len(r.problems) > len(shown[:MAX_LISTED_FAILURES]) and r.status != "未作答":
            lines.append(f"- ……共有 {len(r.problems)} 个用例没有通过")
        lines.append("")
    if row.cell_problems:
        lines += ["## 运行笔记本时遇到的问题", "",
                  "评分只执行笔记本里的 import、函数和类的定义和简单赋值（不重新训练）；下面这些单元出了问题，"
                  "已跳过，其余照常评分。单元从笔记本开头数起，文字单元也算。", ""]
        lines += [f"- {p}" for p in row.cell_problems[:10]] + [""]
    return "\n".join(lines)


def _distinct(problems: list[str]) -> list[str]:
    """同一种错误只列第一次出现的用例（"用例 …（…）：错在哪里"按"错在哪里"去重）。"""
    seen, keep = set(), []
    for p in problems:
        what = p.split("）：", 1)[-1]
        if what not in seen:
            seen.add(what)
            keep.append(p)
    return keep


def gradescope_json(row: SubmissionResult, sandbox: Sandbox | None = None) -> dict:
    tests = []
    for r in row.exercises:
        output = [f"{r.status}：公开用例 {r.passed_public}/{r.n_public}，隐藏用例 {r.passed_hidden}/{r.n_hidden}"]
        output += _distinct(r.problems)[:MAX_LISTED_FAILURES]
        tests.append({"name": f"{r.id}：{r.title}", "score": r.earned, "max_score": r.points,
                      "output": "\n".join(output), "visibility": "visible"})
    notes = row.notes + ([unconfined_note(sandbox)] if unconfined_note(sandbox) else [])
    return {"score": row.score, "max_score": row.max_score, "tests": tests,
            "output": "；".join(notes), "execution_time": round(row.seconds, 2)}


def write_outputs(result: ClassResult, out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "feedback").mkdir(exist_ok=True)
    (out / "results").mkdir(exist_ok=True)
    ids = [s.id for s in result.chapter.exercises]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["student", *ids, "score", "max_score", "note"])
    for row in result.rows:
        earned = {r.id: _fmt(r.earned) for r in row.exercises}
        writer.writerow([row.student, *(earned[i] for i in ids), _fmt(row.score), _fmt(row.max_score),
                         "；".join(row.notes)])
    # utf-8-sig：带 BOM，Excel 打开中文备注不乱码；csv 模块与 pandas 读取时用 encoding="utf-8-sig"
    (out / "grades.csv").write_text(buf.getvalue(), encoding="utf-8-sig")
    for row in result.rows:
        (out / "feedback" / f"{row.student}.md").write_text(feedback_markdown(result.chapter, row, result.sandbox), encoding="utf-8")
        (out / "results" / f"{row.student}.json").write_text(
            json.dumps(gradescope_json(row, result.sandbox), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def summary(result: ClassResult) -> str:
    rows = result.rows
    n = len(rows)
    max_score = rows[0].max_score if rows else 0
    mean = sum(r.score for r in rows) / n if n else 0.0
    slowest = max(rows, key=lambda r: r.seconds) if rows else None
    lines = [f"第 {int(result.chapter.key[2:])} 章（{result.chapter.filename}）：评了 {n} 份提交，"
             f"平均 {mean:.2f} / {_fmt(max_score)} 分，用时 {result.seconds:.1f} 秒。"]
    if slowest is not None:
        lines.append(f"最慢的一份：{slowest.student}（{slowest.seconds:.1f} 秒）。")
    noted = [r for r in rows if r.notes]
    if noted:
        lines.append("有备注的提交：" + "；".join(f"{r.student}：{'、'.join(r.notes)}" for r in noted[:10])
                     + ("……" if len(noted) > 10 else ""))
    lines.append(result.sandbox.describe())
    lines.append(f"每份提交的上限：{result.limits.describe()}；墙钟时间见 --timeout。")
    lines.append(f"评分前先在同样的环境里评了答案卷：满分（{result.key_seconds:.1f} 秒）。")
    lines.append(f"{result.n_full} passed, {n - result.n_full} failed")
    return "\n".join(lines)
