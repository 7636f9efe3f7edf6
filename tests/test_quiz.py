"""章末自测 widgets.Quiz：题目的结构（单选恰好一个正确、每个选项都有解释、填数题有容差与提示）、
判分规则，以及每章笔记本里的自测：题数、两道以上指向"常见坑"、答案来自本次运行而不是手抄的常数。"""
from __future__ import annotations

import ast
import json
import pathlib

import pytest

from tfcourse.widgets import Quiz

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _quiz():
    return Quiz([
        Quiz.single("a", "单选", [("甲", False, "甲错在…"), ("乙", True, "乙对，因为…"), ("丙", False, "丙错在…")]),
        Quiz.multi("b", "多选", [("一", True, "对"), ("二", False, "错"), ("三", True, "对")]),
        Quiz.number("c", "填数", answer=85.3, tolerance=0.1, why="第 2 节打印的", hint="看第 2 节"),
    ], chapter=14)


def test_grading_needs_exactly_the_right_set_or_a_number_within_tolerance():
    q = _quiz()
    assert q.grade({"a": [1], "b": [0, 2], "c": 85.35}) == {"a": True, "b": True, "c": True}
    assert q.grade({"a": [0], "b": [0], "c": 85.5}) == {"a": False, "b": False, "c": False}
    assert q.grade({"b": [0, 1, 2], "c": 85.2}) == {"a": None, "b": False, "c": True}
    assert q.grade({"a": [], "c": True}) == {"a": None, "b": None, "c": False}     # 布尔值不是数
    assert q.score({"a": [1], "b": [2, 0], "c": 85.3}) == (3, 3)
    assert q.score() == (0, 3)                                                     # 还没作答


@pytest.mark.parametrize("make, words", [
    (lambda: Quiz.single("x", "题", [("甲", True, "对"), ("乙", True, "也对")]), "恰好有一个正确"),
    (lambda: Quiz.single("x", "题", [("甲", True, "对"), ("乙", False, "")]), "解释"),
    (lambda: Quiz.multi("x", "题", [("甲", True, "对"), ("乙", True, "对")]), "不能全对"),
    (lambda: Quiz.multi("x", "题", [("甲", True, "对")]), "两个选项"),
    (lambda: Quiz.single("x", "题", [("甲", "yes", "对"), ("乙", False, "错")]), "是否正确"),
    (lambda: Quiz.number("x", "题", answer=float("nan"), tolerance=0.1, why="w", hint="h"), "有限的数"),
    (lambda: Quiz.number("x", "题", answer=1.0, tolerance=-1, why="w", hint="h"), "tolerance"),
    (lambda: Quiz.number("x", "题", answer=1.0, tolerance=0.1, why="w", hint=" "), "提示"),
    (lambda: Quiz([], chapter=3), "空的"),
    (lambda: Quiz([{"kind": "essay"}], chapter=3), "构造"),
    (lambda: Quiz([Quiz.number("x", "题", answer=1, tolerance=0, why="w", hint="h")], chapter=17), "1–16"),
    (lambda: Quiz([Quiz.number("x", "题", answer=1, tolerance=0, why="w", hint="h")] * 2, chapter=3), "重复"),
])
def test_bad_questions_are_refused_in_chinese(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def _quiz_cells():
    """每章笔记本里构造 Quiz 的单元：(章节文件, 单元源码)。"""
    for path in sorted((ROOT / "book").rglob("ch*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "code" and "Quiz(" in src and ("Quiz.single" in src or "Quiz.number" in src):
                yield path, cell, src


QUIZ_CELLS = list(_quiz_cells())


@pytest.mark.parametrize("path, cell, src", QUIZ_CELLS, ids=[p.stem[:4] for p, _, _ in QUIZ_CELLS])
def test_chapter_quiz_has_5_to_8_questions_two_on_pitfalls_and_answers_from_the_run(path, cell, src):
    tree = ast.parse(src)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name) and n.func.value.id == "Quiz"]
    assert 5 <= len(calls) <= 8, f"{path.name}：自测应有 5–8 题，实际 {len(calls)} 题"
    assert src.count("常见坑") >= 2, f"{path.name}：至少两道题指向本章「常见坑」里的误解"
    for call in calls:
        if call.func.attr == "number":
            answer = next(k.value for k in call.keywords if k.arg == "answer")
            names = {n.id for n in ast.walk(answer) if isinstance(n, ast.Name)} - {"round", "abs", "float", "int"}
            assert names, f"{path.name}：填数题的答案要取本次运行的变量，不要手抄常数：{ast.unparse(answer)}"
    tags = cell["metadata"].get("tags", [])
    assert "remove-input" in tags and cell["metadata"].get("jupyter", {}).get("source_hidden") is True, \
        f"{path.name}：自测的代码含答案，网页上移除、笔记本里折叠"


def test_assign_keeps_the_quiz_in_the_student_notebook(tmp_path):
    """tfcourse assign 只去掉参考答案；自测留在学生版里（它是给学生自己核对的，不计分）。"""
    from tfcourse.instructor.assign import assign

    for path, cell, _ in QUIZ_CELLS:
        ch = assign(path.stem[2:4], tmp_path / path.stem)
        student = json.loads((tmp_path / path.stem / "student" / ch.filename).read_text(encoding="utf-8"))
        assert any(c.get("id") == cell.get("id") for c in student["cells"]), path.name
