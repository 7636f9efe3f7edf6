"""在沙箱里运行一份提交：python -m tfcourse.instructor.runner 工作目录。

工作目录里有 submission.ipynb（学生的笔记本）和 cases.pkl（教师端写的：每道练习的函数名与输入）。
这里只执行笔记本里的定义——import、函数与类的定义、不调用函数的赋值（如 BOS = numerals.BOS_ID）——
不执行章节的训练和画图；然后把每个输入交给学生的函数，把返回值写成 result.json + result.npz
（只含数组与 JSON，教师端读取时不会执行任何代码）。期望输出不在这里：比对在教师端的进程里做。
每做完一道题就把结果写一次：之后撞上 CPU 上限、超时或被停掉，先做完的题照样评分。
学生代码 print 的输出超过上限的四分之一就丢掉（只记下"输出过多"），评分照常进行。
"""
from __future__ import annotations

import ast
import copy
import io
import json
import pickle
import sys
import time
import traceback

import numpy as np

DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


# 赋值右边只许出现这些：常数、名字、属性（numerals.BOS_ID）、元组列表字典、算术与比较、lambda（不看函数体）
SIMPLE = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp,
          ast.BoolOp, ast.Compare, ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.Starred)


def _simple(node: ast.AST) -> bool:
    if isinstance(node, ast.Lambda):
        return True
    return isinstance(node, SIMPLE) and all(_simple(child) for child in ast.iter_child_nodes(node))


def definitions(tree: ast.Module) -> list[ast.stmt]:
    """一个单元里评分要执行的顶层语句：定义，以及右边只有常数、名字和算术的赋值（不调用函数、不取下标）。"""
    keep = []
    for node in tree.body:
        if isinstance(node, DEFINITIONS):
            keep.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _simple(node.value):
            keep.append(node)
    return keep


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def bound_names(node: ast.stmt) -> set[str]:
    """一条顶层语句执行完会在模块里绑定的名字：赋值、for、with … as、import、def 与 class 的名字、:= 等。
    不进函数体、类体和推导式（那里的名字不是全局的）；except … as e 的 e 在块末被删掉，也不算。"""
    names: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            return
        if isinstance(n, _SCOPES):
            return
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update(a.asname or a.name.split(".")[0] for a in n.names if a.name != "*")
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return names


def _cells_text(cells: list[int]) -> str:
    return "第 " + "、".join(str(i + 1) for i in sorted(set(cells))[:3]) + (" 等" if len(set(cells)) > 3 else "") + " 个单元"


def skipped_name_hint(exc: BaseException, skipped: dict[str, list[int]], failed: dict[str, list[int]],
                      who: str) -> str | None:
    """NameError 的名字只由评分时不执行（或执行出错）的语句定义时，说清楚是哪个名字、在哪个单元；否则 None。"""
    if type(exc) is not NameError or not getattr(exc, "name", None):
        return None
    name = exc.name
    if name in skipped:
        how = f"它只在{_cells_text(skipped[name])}里由一条评分时不执行的语句定义"
    elif name in failed:
        how = f"它只在{_cells_text(failed[name])}里由一条评分时执行出错的语句定义"
    else:
        return None
    return (f"{who}用到了全局名字 `{name}`，{how}（评分只执行 import、函数与类的定义和简单赋值，"
            "见笔记本开头的说明）。请把它需要的东西从参数里拿、在函数里算，或写成简单赋值")


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}：{exc}"
    return text if len(text) <= 300 else text[:300] + "…"


class _Arrays:
    """把返回值编码成 JSON 结构 + 一组 numpy 数组（不用 pickle）。"""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def encode(self, value, depth: int = 0):
        if hasattr(value, "detach") and hasattr(value, "cpu"):
            value = value.detach().cpu().numpy()
        if value is None:
            return {"k": "none"}
        if isinstance(value, (tuple, list)) and depth < 4:
            return {"k": type(value).__name__, "items": [self.encode(v, depth + 1) for v in value]}
        try:
            arr = np.asarray(value)
        except Exception:  # 任何转不成数组的对象
            return {"k": "other", "type": type(value).__name__}
        if arr.dtype == object or arr.dtype.kind == "V":
            return {"k": "other", "type": type(value).__name__}
        key = f"a{len(self.arrays)}"
        self.arrays[key] = arr
        return {"k": "array", "key": key}


# 撞上资源上限时学生代码看到的错误 → 上限的名字（教师端据此在备注里写明是哪个上限）
def cap_of(exc: BaseException) -> str | None:
    import errno

    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, CpuCap):
        return "cpu"
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "not enough memory" in text.lower() \
            or "Cannot allocate memory" in text:
        return "memory"
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG or "File too large" in text:
        return "file_size"
    if (isinstance(exc, OSError) and exc.errno == errno.EAGAIN) or "can't start new thread" in text \
            or "Resource temporarily unavailable" in text:
        return "procs"
    return None


class CpuCap(BaseException):
    """CPU 时间到了软上限（SIGXCPU）：当前这道题算撞上了上限，没做的题不再做，写下已有的结果就结束。"""


class _CappedStream:
    """学生代码的 print 走这里：超过 budget 个字符后不再写出，只记下"输出过多"（评分照常进行）。
    直接往文件描述符 1、2 写的，仍由教师端在总输出超过上限时整个停掉。"""

    def __init__(self, stream, budget: int):
        self.stream, self.budget, self.used, self.capped = stream, budget, 0, False

    def write(self, text) -> int:
        text = str(text)
        room = self.budget - self.used
        if len(text) > room:
            self.capped = True
            text = text[:max(room, 0)]
        self.used += len(text)
        if text:
            self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _raise_cpu_cap(signum, frame):
    raise CpuCap("CPU 时间超限")


def apply_limits(limits: dict) -> None:
    """在执行学生代码之前设好资源上限（软硬相同：学生代码调不高）。CPU 的硬上限多 2 秒：先收到 SIGXCPU。"""
    import resource

    def cap(which, soft, hard=None):
        try:
            resource.setrlimit(which, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass

    if limits.get("memory"):
        cap(resource.RLIMIT_AS, int(limits["memory"]))
    if limits.get("procs"):
        cap(resource.RLIMIT_NPROC, int(limits["procs"]))
    if limits.get("file_size"):
        cap(resource.RLIMIT_FSIZE, int(limits["file_size"]))
    if limits.get("cpu"):
        cap(resource.RLIMIT_CPU, int(limits["cpu"]), int(limits["cpu"]) + 2)
    cap(resource.RLIMIT_CORE, 0)
    import signal

    # 写文件超过上限时不直接杀掉进程，而是让那次写入出错（OSError EFBIG）：只丢那道题
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # CPU 到了软上限先收到 SIGXCPU（离硬上限还有 2 秒）：变成异常，交出已做完的题
    signal.signal(signal.SIGXCPU, _raise_cpu_cap)


REFERENCES = "tfcourse.exercises"


class _NoReferences:
    """sys.meta_path 上的一道关：评分时导入 tfcourse.exercises 的子模块（各章的参考实现）一律失败。"""

    def find_spec(self, name, path=None, target=None):
        if name.startswith(REFERENCES + "."):
            raise ImportError(f"评分时不能导入 {name}：参考答案不交给学生代码，练习函数要自己算出结果。")
        return None


def seal_references() -> None:
    """学生代码拿不到参考答案：已导入的 tfcourse.exercises 全部移走，换成一个只有什么也不做的 check 的空壳
    （笔记本里 `from tfcourse.exercises import check` 照常成功），并拦下对各章子模块的导入。
    沙箱里那个目录本身也被盖住（sandbox.detect），从磁盘上读源码同样读不到。"""
    import types

    for name in [m for m in sys.modules if m == REFERENCES or m.startswith(REFERENCES + ".")]:
        del sys.modules[name]
    shell = types.ModuleType(REFERENCES, "评分时的空壳：参考答案不在这里。")
    shell.check = lambda *args, **kwargs: None
    shell.__path__ = []                                        # 子模块的导入走到 _NoReferences 那道关

    def refuse(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(f"评分时不能导入 {REFERENCES}.{name}：参考答案不交给学生代码，练习函数要自己算出结果。")

    shell.__getattr__ = refuse
    sys.modules[REFERENCES] = shell
    if "tfcourse" in sys.modules:
        sys.modules["tfcourse"].exercises = shell
    if not any(isinstance(f, _NoReferences) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoReferences())


def run(workdir: str) -> None:
    import pathlib

    work = pathlib.Path(workdir)
    job = pickle.loads((work / "cases.pkl").read_bytes())        # 教师端写的，先于学生代码读入
    limits = job.get("limits", {})
    apply_limits(limits)
    seal_references()
    budget = max(int(limits.get("output") or 0) // 4, 4096) if limits.get("output") else 1 << 62
    sys.stdout = _CappedStream(sys.stdout, budget)            # print 的输出：超过上限的一部分就丢掉
    sys.stderr = _CappedStream(sys.stderr, budget)
    from IPython.core.inputtransformer2 import TransformerManager
    from IPython.display import display

    report = {"cells": [], "exercises": {}}
    nb = json.loads((work / "submission.ipynb").read_text(encoding="utf-8"))
    namespace = {"__name__": "__main__", "display": display}
    transformer = TransformerManager()
    skipped: dict[str, list[int]] = {}     # 名字 → 绑定它、但评分时不执行的语句所在的单元
    failed: dict[str, list[int]] = {}      # 名字 → 绑定它、执行时出错的语句所在的单元
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else str(src)
        try:
            tree = ast.parse(transformer.transform_cell(src))
        except SyntaxError as exc:
            report["cells"].append({"cell": i, "problem": "syntax", "error": f"第 {exc.lineno} 行：{exc.msg}"})
            continue
        kept = definitions(tree)
        for node in tree.body:
            if not any(node is k for k in kept):
                for name in bound_names(node):
                    skipped.setdefault(name, []).append(i)
        for node in kept:
            try:
                exec(compile(ast.Module([node], type_ignores=[]), f"<单元 {i + 1}>", "exec"), namespace)
            except CpuCap:                 # CPU 用完了：一道题也没做，写下单元的记录就结束
                report["cells"].append({"cell": i, "problem": "error", "error": "CPU 时间超限", "cap": "cpu"})
                _finish(work, report, _Arrays())
                return
            except BaseException as exc:   # 学生代码的任何错误（包括 SystemExit）都只记下来
                for name in bound_names(node):
                    failed.setdefault(name, []).append(i)
                if not isinstance(node, (ast.Assign, ast.AnnAssign)):   # 赋值失败多半是正文的中间结果没有算：不报
                    item = {"cell": i, "problem": "error", "error": _error_text(exc)}
                    if cap_of(exc):
                        item["cap"] = cap_of(exc)
                    hint = skipped_name_hint(exc, skipped, failed, "这个单元")
                    if hint:
                        item["hint"] = hint
                    report["cells"].append(item)

    arrays = _Arrays()
    _finish(work, report, arrays)          # 每做完一道题就写一次：后面撞上上限、被停掉，做完的题照样算
    for eid, item in job["exercises"].items():
        fn = namespace.get(item["function"])
        if not callable(fn):
            report["exercises"][eid] = {"missing": True, "cases": []}
            continue
        outcomes = []
        for args in item["cases"]:
            start = time.perf_counter()
            try:
                got = fn(*copy.deepcopy(args))
                outcome = {"status": "ok", "value": arrays.encode(got)}
            except NotImplementedError:
                outcome = {"status": "not_implemented"}
            except CpuCap:                 # 这道题算撞上 CPU 上限；后面的题不再做
                outcomes.append({"status": "error", "error": "CPU 时间超限", "cap": "cpu",
                                 "seconds": time.perf_counter() - start})
                report["exercises"][eid] = {"missing": False, "cases": outcomes}
                _finish(work, report, arrays)
                return
            except BaseException as exc:
                outcome = {"status": "error", "error": _error_text(exc)}
                if cap_of(exc):
                    outcome["cap"] = cap_of(exc)
                hint = skipped_name_hint(exc, skipped, failed, f"函数 {item['function']} ")
                if hint:
                    outcome["hint"] = hint
            outcome["seconds"] = time.perf_counter() - start
            outcomes.append(outcome)
        report["exercises"][eid] = {"missing": False, "cases": outcomes}
        _finish(work, report, arrays)


def _finish(work, report: dict, arrays: _Arrays) -> None:
    """写下目前为止的结果（先写到临时文件再改名：被停在半路也不会留下写了一半的文件）。"""
    capped = [s for s in (sys.stdout, sys.stderr) if isinstance(s, _CappedStream) and s.capped]
    report["output_capped"] = bool(capped)
    buf = io.BytesIO()
    np.savez(buf, **arrays.arrays)
    (work / "result.npz.tmp").write_bytes(buf.getvalue())
    (work / "result.npz.tmp").replace(work / "result.npz")
    (work / "result.json.tmp").write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    (work / "result.json.tmp").replace(work / "result.json")


if __name__ == "__main__":
    try:
        run(sys.argv[1])
    except Exception:
        traceback.print_exc()
        sys.exit(2)
