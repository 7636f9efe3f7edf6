"""在沙箱里运行一份提交：python -m tfcourse.instructor.runner 工作目录。

工作目录里有 submission.ipynb（学生的笔记本）和 cases.pkl（教师端写的：每道练习的函数名与输入）。
这里只执行笔记本里的定义——import、函数与类的定义、不调用函数的赋值（如 BOS = numerals.BOS_ID）——
不执行章节的训练和画图；然后把每个输入交给学生的函数，把返回值写成 result.json + result.npz
（只含数组与 JSON，教师端读取时不会执行任何代码）。期望输出不在这里：比对在教师端的进程里做。
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


def run(workdir: str) -> None:
    import pathlib

    work = pathlib.Path(workdir)
    job = pickle.loads((work / "cases.pkl").read_bytes())        # 教师端写的，先于学生代码读入
    from IPython.core.inputtransformer2 import TransformerManager
    from IPython.display import display

    report = {"cells": [], "exercises": {}}
    nb = json.loads((work / "submission.ipynb").read_text(encoding="utf-8"))
    namespace = {"__name__": "__main__", "display": display}
    transformer = TransformerManager()
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
        for node in definitions(tree):
            try:
                exec(compile(ast.Module([node], type_ignores=[]), f"<单元 {i}>", "exec"), namespace)
            except BaseException as exc:   # 学生代码的任何错误（包括 SystemExit）都只记下来
                if not isinstance(node, (ast.Assign, ast.AnnAssign)):   # 赋值失败多半是正文的中间结果没有算：不报
                    report["cells"].append({"cell": i, "problem": "error", "error": _error_text(exc)})

    arrays = _Arrays()
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
            except BaseException as exc:
                outcome = {"status": "error", "error": _error_text(exc)}
            outcome["seconds"] = time.perf_counter() - start
            outcomes.append(outcome)
        report["exercises"][eid] = {"missing": False, "cases": outcomes}

    buf = io.BytesIO()
    np.savez(buf, **arrays.arrays)
    (work / "result.npz").write_bytes(buf.getvalue())
    (work / "result.json").write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    try:
        run(sys.argv[1])
    except Exception:
        traceback.print_exc()
        sys.exit(2)
