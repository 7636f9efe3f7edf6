"""一章（或整个 src/）到底用到哪些第三方包：沿着 import 走遍课程包，连随包安装的数据也算上。

nbtool.py 用它生成每章的 Colab 安装单元（只装这一章要而 Colab 没有的包），
tests/test_dependencies.py 用它核对 requirements.txt、Binder 与 Colab 三处都装了这些包。
"""
from __future__ import annotations

import ast
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "tfcourse"
# 随包安装的数据：找文件的函数，第一个参数是包的导入名（见 tfcourse/data/_packaged.py）
DATA_FINDERS = {"verified_file", "package_dir"}


def _module_file(name: str) -> pathlib.Path | None:
    base = SRC / name.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """一段代码导入的全部模块（绝对名；相对导入按 module 解析），以及数据查找函数点名的包。"""
    found = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)    # from x import 子模块
        elif isinstance(node, ast.Call):
            fn = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if fn in DATA_FINDERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def _code_of_notebook(path: pathlib.Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] == "code" and "colab-setup" not in cell.get("metadata", {}).get("tags", []):
            lines += [ln for ln in "".join(cell["source"]).split("\n") if not ln.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def third_party(roots: set[str]) -> set[str]:
    """从 roots（模块名）出发，沿课程包内部的 import 走到底，返回用到的第三方顶层包名（导入名）。"""
    seen, todo, external = set(), list(roots), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        top = name.split(".")[0]
        if top != PACKAGE:
            if top and top not in sys.stdlib_module_names:
                external.add(top)
            continue
        path = _module_file(name)
        if path is None:
            continue                       # from tfcourse.x import 函数名：不是模块
        parts = name.split(".")
        for i in range(1, len(parts)):     # 导入子模块会先执行各级包的 __init__
            todo.append(".".join(parts[:i]))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        todo += _imports(tree, name, path.name == "__init__.py")
    return external


def notebook_third_party(path) -> set[str]:
    tree = ast.parse(_code_of_notebook(pathlib.Path(path)))
    return third_party(_imports(tree, "__main__", False))


def package_third_party() -> set[str]:
    """整个课程包（src/tfcourse 下每个模块）用到的第三方包。"""
    names = set()
    for path in (SRC / PACKAGE).rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.add(".".join(parts))
    return third_party(names)
