"""章末自测 widgets.Quiz：题目的结构（单选恰好一个正确、每个选项都有解释、填数题有容差与提示）、
判分规则，以及每章笔记本里的自测：题数、两道以上指向"常见坑"、答案来自本次运行而不是手抄的常数。"""
from __future__ import annotations

import ast
import json
import pathlib

import pytest

from tfcourse.widgets import Quiz
from tfcourse.widgets.quiz import blind_scores, option_key

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _quiz():
    return Quiz([
        Quiz.single("a", "单选", [("甲", False, "甲错在…"), ("乙", True, "乙对，因为…"), ("丙", False, "丙错在…")]),
        Quiz.multi("b", "多选", [("一", True, "对"), ("二", False, "错"), ("三", True, "对")]),
        Quiz.number("c", "填数", answer=85.3, tolerance=0.1, why="第 2 节打印的", hint="看第 2 节"),
    ], chapter=14)


def test_grading_needs_exactly_the_right_set_or_a_number_within_tolerance():
    q = _quiz()
    k = option_key
    assert q.grade({"a": [k("乙")], "b": [k("一"), k("三")], "c": 85.35}) == {"a": True, "b": True, "c": True}
    assert q.grade({"a": [k("甲")], "b": [k("一")], "c": 85.5}) == {"a": False, "b": False, "c": False}
    assert q.grade({"b": [k("一"), k("二"), k("三")], "c": 85.2}) == {"a": None, "b": False, "c": True}
    assert q.grade({"a": [], "c": True}) == {"a": None, "b": None, "c": False}     # 布尔值不是数
    assert q.score({"a": [k("乙")], "b": [k("三"), k("一")], "c": 85.3}) == (3, 3)
    assert q.score() == (0, 3)                                                     # 还没作答
    # 也可以按显示的位置作答：位置指向洗牌之后的顺序
    shown = {qq["id"]: [o["text"] for o in qq["options"]] for qq in q.questions if qq["kind"] != "number"}
    assert q.grade({"a": [shown["a"].index("乙")]})["a"] is True
    assert q.grade({"a": [shown["a"].index("甲")]})["a"] is False


def _single(qid, n, right=0):
    return Quiz.single(qid, f"题 {qid}", [(f"选项{j}", j == right, f"为什么{j}") for j in range(n)])


def test_option_order_is_fixed_by_chapter_and_id_and_independent_of_how_options_were_written():
    """同一道题在同一章里每次显示的顺序相同（网页、笔记本、PDF 一致）；作者把正确选项写在哪里都一样。"""
    a = Quiz([_single("q1", 4, right=0), _single("q2", 3)], chapter=5).questions
    b = Quiz([_single("q1", 4, right=0), _single("q2", 3)], chapter=5).questions
    assert a == b
    texts = lambda qs: [[o["text"] for o in q["options"]] for q in qs]
    other = Quiz([_single("q1", 4, right=0), _single("q2", 3)], chapter=6).questions
    assert sorted(map(sorted, texts(other))) == sorted(map(sorted, texts(a)))      # 只是换了顺序
    # 单个选项的 key 跟着文字走，与位置无关
    for q in a:
        assert all(o["key"] == option_key(o["text"]) for o in q["options"])


@pytest.mark.parametrize("chapter", range(1, 19))
def test_right_answers_spread_over_positions_even_when_authors_always_write_them_first(chapter):
    """作者总把正确选项写在第一个：显示出来后，一章里没有哪个位置占到单选题答案的一半以上，
    "总选第一个"的得分与瞎猜相差不到 1/n。"""
    qs = Quiz([_single(f"s{i}", 4) for i in range(7)] + [_single("t", 3)], chapter=chapter).questions
    r = blind_scores(qs)
    assert max(r["positions"].values()) <= len(qs) / 2
    assert len(r["positions"]) >= 3                                               # 至少用上三个位置
    assert r["first"] <= r["guess"] + 1 / 4 + 1e-9


def test_blind_scores_counts_first_longest_and_guessing():
    """blind_scores 真能抓出"答案总是最长的一个"与"答案总在第一个"。"""
    long_right = {"kind": "single", "options": [
        {"text": "短", "correct": False}, {"text": "这个选项最长也最周全", "correct": True}, {"text": "中等长", "correct": False}]}
    first_right = {"kind": "single", "options": [
        {"text": "甲", "correct": True}, {"text": "乙乙", "correct": False}]}
    multi = {"kind": "multi", "options": [{"text": "一", "correct": True}, {"text": "二", "correct": True},
                                          {"text": "三三三", "correct": False}]}
    r = blind_scores([long_right, first_right, multi, {"kind": "number"}])
    assert r["n"] == 3
    assert r["longest"] == pytest.approx(1 / 3)                                   # 只有第一题
    assert r["first"] == pytest.approx(1 / 3)                                     # 只有第二题
    assert r["guess"] == pytest.approx((1 / 3 + 1 / 2 + 1 / 7) / 3)
    assert r["positions"] == {1: 1, 0: 1}
    tie = {"kind": "single", "options": [{"text": "甲乙", "correct": True}, {"text": "丙丁", "correct": False}]}
    assert blind_scores([tie])["longest"] == pytest.approx(0.5)                   # 并列时按随便挑算
    assert r["shortest"] == pytest.approx((0 + 1 + 0) / 3)                        # "甲"最短且对


@pytest.mark.parametrize("make, words", [
    (lambda: Quiz.single("x", "题", [("甲", True, "对"), ("乙", True, "也对")]), "恰好有一个正确"),
    (lambda: Quiz.single("x", "题", [("甲", True, "对"), ("乙", False, "")]), "解释"),
    (lambda: Quiz.multi("x", "题", [("甲", True, "对"), ("乙", True, "对")]), "不能全对"),
    (lambda: Quiz.multi("x", "题", [("甲", True, "对")]), "两个选项"),
    (lambda: Quiz.single("x", "题", [("甲", True, "对"), ("甲", False, "错")]), "两遍"),
    (lambda: Quiz.single("x", "题", [("甲", "yes", "对"), ("乙", False, "错")]), "是否正确"),
    (lambda: Quiz.number("x", "题", answer=float("nan"), tolerance=0.1, why="w", hint="h"), "有限的数"),
    (lambda: Quiz.number("x", "题", answer=1.0, tolerance=-1, why="w", hint="h"), "tolerance"),
    (lambda: Quiz.number("x", "题", answer=1.0, tolerance=0.1, why="w", hint=" "), "提示"),
    (lambda: Quiz([], chapter=3), "空的"),
    (lambda: Quiz([{"kind": "essay"}], chapter=3), "构造"),
    (lambda: Quiz([Quiz.number("x", "题", answer=1, tolerance=0, why="w", hint="h")], chapter=19), "1–18"),
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
