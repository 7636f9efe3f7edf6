"""全书知识地图：16 章各讲了什么、用到课程包的哪些模块。第 16 章引入。

地图不是手写的：`build_knowledge_map(root)` 从仓库里读出来——章节与分篇来自 `_toc.yml`，
每章的标题和各节来自笔记本里的 `#`/`##` 标题，每章用到的课程包模块来自笔记本代码单元里的
import（与 `tools/imports.py` 同样用 ast 分析），每个模块由哪一章引入来自模块文档字符串里的
"第 N 章引入"。随包附带一份生成好的 `knowledge_map.json`（Colab 只拿到一个笔记本，没有仓库），
测试核对它与仓库现在的样子一致；重新生成：`python -m tfcourse.widgets.knowledge_map`。
"""
from __future__ import annotations

import ast
import json
import os
import pathlib
import re

import traitlets as t

from ._base import CourseWidget, esm

PACKAGE = "tfcourse"
SHIPPED = pathlib.Path(__file__).with_name("knowledge_map.json")
HOST_PAGE = "book/p4-practice/ch16-optimization-evaluation-roadmap"   # 显示地图的那一页（链接相对它）
# 每章都有的固定栏目，不算"本章讲了什么"
STANDARD_SECTIONS = ("路标", "常见坑与自查", "练习", "小结", "自测", "下一篇", "全书回顾")
_INTRO = re.compile(r"(?:第\s*(\d+)\s*章|附录\s*([A-Z]))\s*引入")


def appendix_number(letter: str) -> int:
    """附录的章号：附录 A 是第 17 个笔记本（16 章之后），B 是第 18 个……"""
    return 16 + ord(letter) - ord("A") + 1


def chapter_label(number: int) -> str:
    """读者看到的章名：第 1–16 章，之后是附录 A、B……"""
    return f"第 {number} 章" if number <= 16 else f"附录 {chr(ord('A') + number - 17)}"


def _repo_root() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parents[3]


def _cells(nb_path: pathlib.Path) -> list[dict]:
    return json.loads(nb_path.read_text(encoding="utf-8"))["cells"]


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _module_exists(src: pathlib.Path, dotted: str) -> bool:
    base = src / dotted.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def notebook_package_imports(nb_path, src=None) -> dict[str, list[str]]:
    """一个笔记本的代码单元从课程包导入了什么：{模块全名: [导入的名字…]}（按名字排序）。

    `from tfcourse.x import a` → tfcourse.x 下的 a；`from tfcourse import sampling`（是模块）→ tfcourse.sampling；
    `from tfcourse import start_chapter`（不是模块）不算（每章都有）；`import tfcourse.x` → tfcourse.x。
    Colab 安装单元和 %、! 开头的行不算（与 tools/imports.py 相同）。"""
    src = pathlib.Path(src) if src is not None else _repo_root() / "src"
    found: dict[str, set[str]] = {}
    for cell in _cells(pathlib.Path(nb_path)):
        if cell.get("cell_type") != "code" or "colab-setup" in cell.get("metadata", {}).get("tags", []):
            continue
        code = "\n".join(ln for ln in _source(cell).split("\n") if not ln.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == PACKAGE and a.name != PACKAGE:   # 只有 import tfcourse 的不算
                        found.setdefault(a.name, set())
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                    and node.module.split(".")[0] == PACKAGE:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    if _module_exists(src, sub):
                        found.setdefault(sub, set())
                    elif node.module != PACKAGE:    # from tfcourse import start_chapter：包本身不算一个模块
                        found.setdefault(node.module, set()).add(a.name)
    return {m: sorted(names) for m, names in sorted(found.items())}


def module_info(src=None) -> dict[str, dict]:
    """课程包每个模块的一句话说明（文档字符串的第一句）和引入它的章（"第 N 章引入"；没写时为 0）。"""
    src = pathlib.Path(src) if src is not None else _repo_root() / "src"
    out = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        rel = path.relative_to(src).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if len(parts) < 2 or any(p.startswith("_") for p in parts[1:]):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = doc.strip().split("\n")[0]
        m = _INTRO.search(doc)
        summary = re.split(r"(?<=[。：])", first)[0].rstrip("：。")
        introduced = 0 if not m else int(m.group(1)) if m.group(1) else appendix_number(m.group(2))
        out[".".join(parts)] = {"summary": summary, "introduced": introduced}
    return out


def _plain_heading(text: str) -> str:
    """标题里的公式写成纯文本（小部件不渲染 LaTeX）：$XX^\\top$ → XXᵀ，$\\sqrt{d_k}$ → √d_k。"""
    def plain(m):
        s = m.group(1).replace("^\\top", "ᵀ")
        s = re.sub(r"\\text\{([^}]*)\}", r"\1", s)
        s = re.sub(r"\\sqrt\{([^{}]*)\}", r"√\1", s)
        return s.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\$([^$]*)\$", plain, text)


def read_toc(path) -> dict:
    """读书的目录 _toc.yml（只认本书用到的写法：parts → caption、chapters → file），不依赖 yaml 包。"""
    parts = []
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*-\s*(caption|file):\s*(.+?)\s*$", line)
        if not m:
            continue
        key, value = m.groups()
        if key == "caption":
            parts.append({"caption": value, "chapters": []})
        elif parts:
            parts[-1]["chapters"].append({"file": value})
    return {"parts": parts}


def _heading(line: str, level: int) -> str | None:
    prefix = "#" * level + " "
    return line[len(prefix):].strip() if line.startswith(prefix) else None


def build_knowledge_map(root=None, host_page: str = HOST_PAGE) -> dict:
    """从仓库读出知识地图的数据（见模块说明）。root：仓库根目录（有 _toc.yml 的那一层）。

    返回 {"parts": [{"caption", "chapters": [章号…]}], "chapters": [{"number", "title", "part", "url",
    "sections", "modules": [{"name", "names"}], "introduces": [模块名…]}], "modules": {模块名: {"summary",
    "introduced"}}}；url 是相对 host_page 那一页的链接。"""
    root = pathlib.Path(root) if root is not None else _repo_root()
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise ValueError(f"在 {root} 里找不到 _toc.yml：build_knowledge_map 需要课程仓库的根目录。")
    toc = read_toc(toc_path)
    modules = module_info(root / "src")
    parts, chapters = [], []
    for part in toc.get("parts", []):
        numbers = []
        for entry in part.get("chapters", []):
            file = entry["file"]
            nb = root / f"{file}.ipynb"
            if not nb.is_file():
                continue
            title, number, sections = "", 0, []
            for cell in _cells(nb):
                if cell.get("cell_type") != "markdown":
                    continue
                for line in _source(cell).split("\n"):
                    h1 = _heading(line, 1)
                    if h1 and not title:
                        m = re.match(r"第\s*(\d+)\s*章\s*(.*)", h1)
                        a = re.match(r"附录\s*([A-Z])\s*(.*)", h1)
                        if m:
                            number, title = int(m.group(1)), m.group(2).strip()
                        elif a:
                            number, title = appendix_number(a.group(1)), a.group(2).strip()
                    h2 = _heading(line, 2)
                    if h2 and not h2.startswith(STANDARD_SECTIONS):
                        sections.append(_plain_heading(re.sub(r"^\d+(\.\d+)*\s*", "", h2).strip()))
            if not number:
                raise ValueError(f"{nb.name} 的第一个标题应形如「# 第 N 章　标题」或「# 附录 A　标题」。")
            imports = notebook_package_imports(nb, root / "src")
            used = [{"name": m, "names": names} for m, names in imports.items()]
            chapters.append({
                "number": number, "label": chapter_label(number), "title": title, "part": part.get("caption", ""),
                "url": os.path.relpath(file, os.path.dirname(host_page)).replace(os.sep, "/") + ".html",
                "sections": sections, "modules": used,
                "introduces": sorted(m for m, info in modules.items() if info["introduced"] == number),
            })
            numbers.append(number)
        parts.append({"caption": part.get("caption", ""), "chapters": numbers})
    if not chapters:
        raise ValueError(f"{toc_path} 里没有找到任何章节笔记本。")
    used_anywhere = {m["name"] for c in chapters for m in c["modules"]} | {m for c in chapters for m in c["introduces"]}
    return {"parts": parts, "chapters": chapters,
            "modules": {m: info for m, info in modules.items() if m in used_anywhere}}


def load_knowledge_map(root=None) -> dict:
    """知识地图的数据：在课程仓库里（有 _toc.yml）就现场从仓库读出；否则（例如 Colab）用随包附带的那份。"""
    root = pathlib.Path(root) if root is not None else _repo_root()
    if (root / "_toc.yml").is_file():
        return build_knowledge_map(root)
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


def _check_map(data) -> dict:
    if not isinstance(data, dict) or not {"parts", "chapters", "modules"} <= set(data):
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"知识地图的数据应为含 parts、chapters、modules 的 dict（build_knowledge_map 的输出），实际得到 {got}。")
    numbers = [c["number"] for c in data["chapters"]]
    if not numbers or len(set(numbers)) != len(numbers):
        raise ValueError(f"章号应非空且不重复，实际为 {numbers}。")
    for c in data["chapters"]:
        for m in c["modules"]:
            if m["name"] not in data["modules"]:
                raise ValueError(f"第 {c['number']} 章用到的模块 {m['name']} 不在 modules 里。")
    return json.loads(json.dumps(data))                    # 只留 JSON 基本类型


class KnowledgeMap(CourseWidget):
    """全书知识地图：按篇排开的各章，点一章看它讲了哪些内容、用到课程包的哪些模块（带到那一章的链接）；
    点一个模块，用到它的各章都亮起来。

    data：`load_knowledge_map()` / `build_knowledge_map(root)` 的输出。Python 里用 .selected（章号）、
    .module（高亮的模块名，"" 表示不高亮）读取，用 .select(章号) / .highlight(模块名) 设置。
    """

    _esm = esm("knowledge_map.js")

    parts = t.List(t.Dict()).tag(sync=True)
    chapters = t.List(t.Dict()).tag(sync=True)
    modules = t.Dict().tag(sync=True)
    selected = t.Int(0).tag(sync=True)                     # 选中的章号
    module = t.Unicode("").tag(sync=True)                  # 高亮的模块

    def __init__(self, data=None, *, selected: int | None = None, module: str = "", **kwargs):
        data = _check_map(load_knowledge_map() if data is None else data)
        super().__init__(parts=data["parts"], chapters=data["chapters"], modules=data["modules"], **kwargs)
        self.select(self.numbers[-1] if selected is None else selected)
        self.highlight(module)

    @property
    def numbers(self) -> list[int]:
        """地图上的章号（按目录顺序）。"""
        return [c["number"] for c in self.chapters]

    @t.validate("selected")
    def _clamp_selected(self, proposal):
        value, numbers = proposal["value"], self.numbers
        if not numbers:
            return value
        if value in numbers:
            return value
        return min(numbers, key=lambda n: (abs(n - value), n))   # 夹到最近的一章

    @t.validate("module")
    def _valid_module(self, proposal):
        value = proposal["value"]
        if value and value not in self.modules:
            raise ValueError(f"地图上没有模块 {value!r}；可选的模块：{'、'.join(sorted(self.modules))}。")
        return value

    def select(self, number: int) -> "KnowledgeMap":
        """选中第 number 章（不在地图上时夹到最近的一章）。返回自身。"""
        if isinstance(number, bool) or not isinstance(number, int):
            raise ValueError(f"章号应为整数，实际得到 {number!r}。")
        self.selected = number
        return self

    def highlight(self, module: str = "") -> "KnowledgeMap":
        """高亮用到模块 module（如 "tfcourse.attention"）的各章；"" 取消高亮。返回自身。"""
        if not isinstance(module, str):
            raise ValueError(f"模块名应为字符串，实际得到 {module!r}。")
        self.module = module
        return self

    @property
    def selected_chapter(self) -> dict:
        return next(c for c in self.chapters if c["number"] == self.selected)

    def chapters_using(self, module: str) -> list[int]:
        """用到（导入）模块 module 的各章的章号。"""
        return [c["number"] for c in self.chapters if any(m["name"] == module for m in c["modules"])]


if __name__ == "__main__":
    SHIPPED.write_text(json.dumps(build_knowledge_map(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"已写入 {SHIPPED}")
