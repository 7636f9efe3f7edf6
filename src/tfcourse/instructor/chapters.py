"""找到一章的笔记本，读出它的练习：编号、学生要写的函数名、参考答案单元。assign、grade 与学生版网站共用。

约定（见 CONTRIBUTING.md「写新章节的约定」）：学生单元 `def my_xxx(...)` 之后是 `check("chNN.id", my_xxx)`；
参考答案单元带标签 `solution`，里面是 `def solution_xxx(...)` 和 `check("chNN.id", solution_xxx)`。
"""
from __future__ import annotations

import ast
import copy
import json
import pathlib
import re
from dataclasses import dataclass

SOLUTION_TAG = "solution"


class InstructorError(Exception):
    """给教师看的中文错误（命令行只打印这句话，不打印回溯）。"""


@dataclass(frozen=True)
class ExerciseSpec:
    """一章里的一道练习。"""

    id: str                       # 如 "ch03.causal_mask"
    function: str                 # 学生定义的函数名，如 "my_causal_mask"
    title: str
    points: float
    learner_cell: int             # 定义学生函数的单元序号
    solution_cell: int | None     # 参考答案单元序号（没有就是 None）
    solution_function: str | None


@dataclass
class Chapter:
    key: str                      # "ch03"
    path: pathlib.Path
    notebook: dict
    exercises: list[ExerciseSpec]

    @property
    def filename(self) -> str:
        return self.path.name


def cell_source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def is_solution(cell) -> bool:
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def python_source(source: str) -> str:
    """把单元里的 IPython 语法（%magic、!shell）转成普通 Python，便于用 ast 分析。"""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def parse_cell(source: str) -> ast.Module:
    return ast.parse(python_source(source))


def _check_calls(tree: ast.AST) -> list[tuple[str, str]]:
    """找出 check("编号", 函数名) 调用，返回 [(编号, 函数名)]。"""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and len(node.args) >= 2
                and (getattr(node.func, "id", None) == "check" or getattr(node.func, "attr", None) == "check")
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                and isinstance(node.args[1], ast.Name)):
            found.append((node.args[0].value, node.args[1].id))
    return found


def _top_level_defs(tree: ast.Module) -> dict[str, ast.AST]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def default_book_dirs() -> list[pathlib.Path]:
    """没给 --book 时依次找：当前目录下的 book/、课程包所在仓库的 book/。"""
    import tfcourse

    repo = pathlib.Path(tfcourse.__file__).resolve().parents[2]
    return [pathlib.Path.cwd() / "book", repo / "book"]


def chapter_key(name: str) -> str:
    """"7"、"ch7"、"ch07"、"ch07-encoder" → "ch07"。"""
    m = re.fullmatch(r"(?:ch)?0*(\d+)(?:-.*)?", name.strip().lower())
    if not m:
        raise InstructorError(f"看不懂章节 {name!r}：请写成 ch07 这样的形式，或给出笔记本的路径。")
    return f"ch{int(m.group(1)):02d}"


def find_notebook(chapter: str, book: pathlib.Path | None = None) -> pathlib.Path:
    path = pathlib.Path(chapter)
    if path.suffix == ".ipynb":
        if not path.is_file():
            raise InstructorError(f"找不到笔记本 {path}。")
        return path
    key = chapter_key(chapter)
    dirs = [book] if book is not None else default_book_dirs()
    for d in dirs:
        hits = sorted(pathlib.Path(d).glob(f"p*/{key}-*.ipynb")) + sorted(pathlib.Path(d).glob(f"{key}-*.ipynb"))
        if hits:
            return hits[0]
    where = "、".join(str(d) for d in dirs)
    raise InstructorError(f"在 {where} 里找不到第 {int(key[2:])} 章的笔记本（{key}-*.ipynb）。可以用 --book 指定书的目录。")


def chapters_with_exercises() -> list[str]:
    from ..exercises import EXERCISES

    return sorted({eid.split(".")[0] for eid in EXERCISES})


def load_chapter(chapter: str, book: pathlib.Path | None = None, points: dict | None = None) -> Chapter:
    """读出一章的练习；章里没有练习、或笔记本与登记的练习对不上时抛出 InstructorError（中文）。"""
    from ..exercises import EXERCISES

    path = find_notebook(chapter, book)
    key = chapter_key(path.stem)
    registered = [eid for eid in EXERCISES if eid.split(".")[0] == key]
    if not registered:
        have = "、".join(chapters_with_exercises())
        raise InstructorError(f"第 {int(key[2:])} 章没有练习，没有可布置或评分的内容。有练习的章：{have}。")
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InstructorError(f"读不了笔记本 {path}：{exc}") from exc

    learner_fn, learner_cell, solution_fn, solution_cell = {}, {}, {}, {}
    defs_by_cell = {}
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = parse_cell(cell_source(cell))
        except SyntaxError as exc:
            raise InstructorError(f"{path.name} 的单元 {i} 有语法错误：{exc}") from exc
        defs_by_cell[i] = _top_level_defs(tree)
        for eid, name in _check_calls(tree):
            if is_solution(cell):
                solution_fn[eid], solution_cell[eid] = name, i
            else:
                learner_fn.setdefault(eid, name)
    for eid, name in learner_fn.items():
        cells = [i for i, d in defs_by_cell.items() if name in d and not is_solution(nb["cells"][i])]
        if cells:
            learner_cell[eid] = cells[0]

    specs = []
    for eid in registered:
        if eid not in learner_fn or eid not in learner_cell:
            raise InstructorError(
                f"{path.name} 里找不到练习 {eid} 的学生单元（def my_…(…) 之后 check({eid!r}, my_…)）。")
        sol = solution_cell.get(eid)
        if sol is not None and solution_fn[eid] not in defs_by_cell[sol]:
            sol = None
        pts = (points or {}).get(eid, getattr(EXERCISES[eid], "points", 1))
        specs.append(ExerciseSpec(eid, learner_fn[eid], EXERCISES[eid].title, float(pts), learner_cell[eid],
                                  sol, solution_fn.get(eid) if sol is not None else None))
    specs.sort(key=lambda s: s.learner_cell)
    return Chapter(key, path, nb, specs)


def _clear(cell: dict) -> dict:
    cell = copy.deepcopy(cell)
    if cell.get("cell_type") == "code":
        cell["outputs"], cell["execution_count"] = [], None
    return cell


def solution_dependencies(ch: Chapter) -> list[str]:
    """去掉答案单元后会断的地方：后面的单元用到了只在答案单元里赋值或定义的名字。返回 ["单元 i 用到 x", …]。"""
    in_solution, elsewhere, found = set(), set(), []
    for i, cell in enumerate(ch.notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        tree = parse_cell(cell_source(cell))
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        stored |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        if is_solution(cell):
            in_solution |= stored
            continue
        loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        found += [f"单元 {i} 用到 {name}" for name in sorted((loaded & in_solution) - elsewhere)]
        elsewhere |= stored
    return found


GRADING_RULE = (
    "> **作业怎么评分。** 老师评分时只执行这本笔记本里的 `import`、函数与类的定义和简单赋值"
    "（右边只有常数、名字和算术，如 `BOS = numerals.BOS_ID`），不执行训练、画图和其他语句"
    "（`for`、`with`、`if`、调用函数的赋值 `x = f(…)` 等）；然后用公开用例和老师的隐藏用例调用你的练习函数。"
    "所以练习函数要自给自足：需要的东西从参数里拿，或在函数里算，不要用只由这类语句算出来的全局变量"
    "——否则评分时会报告“用到了全局名字 …”，这道题不得分。"
)


def _with_grading_rule(cells: list[dict]) -> None:
    """把评分规则写进学生版的标题单元（第一个文字单元）的末尾；不增删单元，学生版与答案卷的单元仍一一对应。"""
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            cell["source"] = cell_source(cell).rstrip("\n") + "\n\n" + GRADING_RULE + "\n"
            return


def student_notebook(ch: Chapter) -> dict:
    """去掉所有参考答案单元、清除输出，在标题单元里写上评分规则；其余（Colab 单元、正文、学生用的 check 单元）原样保留。

    去掉答案后笔记本必须还能从头运行到尾：后面的单元若用到只在答案单元里定义的名字，就报错。
    """
    broken = solution_dependencies(ch)
    if broken:
        raise InstructorError(f"{ch.filename} 去掉参考答案后就跑不通了（{'；'.join(broken)}）："
                              "请把这些名字移到答案单元之外。")
    nb = copy.deepcopy(ch.notebook)
    nb["cells"] = [_clear(c) for c in nb.get("cells", []) if not is_solution(c)]
    _with_grading_rule(nb["cells"])
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def _renamed_solution(ch: Chapter, spec: ExerciseSpec) -> str:
    cell = ch.notebook["cells"][spec.solution_cell]
    source = python_source(cell_source(cell))
    node = _top_level_defs(ast.parse(source))[spec.solution_function]
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = source.splitlines()[start - 1: node.end_lineno]
    text = "\n".join(lines)
    return re.sub(rf"\b{re.escape(spec.solution_function)}\b", spec.function, text)


def solved_notebook(ch: Chapter) -> dict:
    """答案卷：学生版笔记本，每道练习的学生单元换成参考答案（函数名改成学生的函数名）。"""
    missing = [s.id for s in ch.exercises if s.solution_cell is None]
    if missing:
        raise InstructorError(f"{ch.filename} 里这些练习没有参考答案单元（标签 solution）：{'、'.join(missing)}。")
    nb = copy.deepcopy(ch.notebook)
    by_learner = {s.learner_cell: s for s in ch.exercises}
    cells = []
    for i, cell in enumerate(nb.get("cells", [])):
        if is_solution(cell):
            continue
        cell = _clear(cell)
        if i in by_learner:
            cell["source"] = "# 参考答案\n" + _renamed_solution(ch, by_learner[i])
        cells.append(cell)
    nb["cells"] = cells
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def manifest(ch: Chapter) -> dict:
    return {
        "chapter": ch.key,
        "notebook": ch.filename,
        "exercises": [{"id": s.id, "function": s.function, "points": s.points, "title": s.title}
                      for s in ch.exercises],
        "max_score": sum(s.points for s in ch.exercises),
    }


def solution_lines(notebooks: list[dict], min_len: int = 12) -> set[str]:
    """参考答案单元里独有的行（去掉首尾空白后不短于 min_len、且不是任何非答案单元里某段文字的一部分）：学生版里不许出现。"""
    elsewhere, candidates = [], set()
    for nb in notebooks:
        for cell in nb.get("cells", []):
            if is_solution(cell):
                candidates.update(ln.strip() for ln in cell_source(cell).splitlines())
            else:
                elsewhere.append(cell_source(cell))
    text = "\n".join(elsewhere)
    return {ln for ln in candidates if len(ln) >= min_len and ln not in text}


def write_json(path: pathlib.Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
