"""教师工具的快速测试：assign 生成的三个文件、隐藏用例生成器、评分只执行定义、反馈不泄露输入、命令行的中文提示。

真正运行提交的测试（答案卷满分、空白卷零分、一个班两个种子）在 test_instructor_grading.py。
"""
import ast
import json
import pathlib

import numpy as np
import pytest
import torch

from tfcourse.exercises import EXERCISES, check
from tfcourse.instructor import cli
from tfcourse.instructor import InstructorError
from tfcourse.instructor.chapters import (cell_source, chapters_with_exercises, is_solution, load_chapter,
                                          solution_lines, student_notebook)
from tfcourse.instructor.grade import exercise_rng, explain, grading_cases, student_ids, submission_files
from tfcourse.instructor.runner import definitions

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = chapters_with_exercises()


def _plain_args(args):
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a.detach().numpy().tolist())
        elif isinstance(a, np.ndarray):
            out.append(a.tolist())
        elif isinstance(a, torch.nn.Module):
            out.append([p.detach().numpy().round(12).tolist() for p in a.parameters()])
        else:
            out.append(repr(a))
    return json.dumps(out)


def test_every_chapter_with_exercises_is_found():
    assert len(CHAPTERS) >= 10 and CHAPTERS[0] == "ch01"
    for key in CHAPTERS:
        ch = load_chapter(key, ROOT / "book")
        registered = sorted(e for e in EXERCISES if e.startswith(key + "."))
        assert sorted(s.id for s in ch.exercises) == registered
        assert all(s.function.startswith("my_") and s.solution_cell is not None for s in ch.exercises)


@pytest.mark.parametrize("key", CHAPTERS)
def test_assign_writes_student_solved_and_manifest(key, tmp_path):
    assert cli.main(["assign", key, "--out", str(tmp_path), "--book", str(ROOT / "book")]) == 0
    ch = load_chapter(key, ROOT / "book")
    student = json.loads((tmp_path / "student" / ch.filename).read_text(encoding="utf-8"))
    solved = json.loads((tmp_path / "solved" / ch.filename).read_text(encoding="utf-8"))
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))

    assert manifest["chapter"] == key
    assert [(e["id"], e["function"], e["points"]) for e in manifest["exercises"]] == \
        [(s.id, s.function, 1.0) for s in ch.exercises]
    # 学生版：没有答案单元、没有输出；Colab 单元与学生用的 check 单元都在；参考答案独有的行一行也没有
    n_solution = sum(is_solution(c) for c in ch.notebook["cells"])
    assert n_solution == len(ch.exercises)
    assert len(student["cells"]) == len(ch.notebook["cells"]) - n_solution
    assert not any(is_solution(c) for c in student["cells"])
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in student["cells"] if c["cell_type"] == "code")
    assert "colab-setup" in student["cells"][0]["metadata"]["tags"]
    text = "\n".join(cell_source(c) for c in student["cells"])
    for s in ch.exercises:
        assert f'check("{s.id}", {s.function})' in text
    lines = solution_lines([ch.notebook])
    assert lines, "参考答案单元里应该有独有的行"
    assert not [ln for ln in lines if ln in text]
    # 答案卷：学生单元换成了参考答案，函数名是学生的函数名
    for s in ch.exercises:
        cell = cell_source(solved["cells"][s.learner_cell - sum(
            is_solution(c) for c in ch.notebook["cells"][: s.learner_cell])])
        tree = ast.parse(cell)
        assert s.function in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "NotImplementedError" not in cell and (s.solution_function not in cell)


def test_student_notebook_must_not_depend_on_solution_cells():
    ch = load_chapter("ch03", ROOT / "book")
    sol = ch.exercises[0].solution_cell
    ch.notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                 "source": f"print({ch.exercises[0].solution_function}(1, 2, 3, 4))"})
    assert ch.notebook["cells"][sol]["metadata"]["tags"].count("solution") == 1
    with pytest.raises(InstructorError, match="去掉参考答案后就跑不通了"):
        student_notebook(ch)


def test_assign_without_chapter_or_exercises_says_so_in_chinese(tmp_path, capsys):
    assert cli.main(["assign"]) == 1
    assert "请指定章节" in capsys.readouterr().err
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# 第 99 章"}], "metadata": {},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "ch99-nothing.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert cli.main(["assign", "ch99", "--book", str(tmp_path), "--out", str(tmp_path / "dist")]) == 1
    assert "第 99 章没有练习" in capsys.readouterr().err
    assert cli.main(["grade", "ch03", str(tmp_path)]) == 1
    assert "秘密种子" in capsys.readouterr().err


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_generated_cases_depend_on_the_seed_only(exercise_id, one_thread):
    ex = EXERCISES[exercise_id]
    a = ex.generate(exercise_rng("seed-a", exercise_id))
    a_again = ex.generate(exercise_rng("seed-a", exercise_id))
    b = ex.generate(exercise_rng("seed-b", exercise_id))
    assert len(a) >= 3
    # 同一个种子：同样的用例；另一个种子：同样几类（描述相同），但输入不同，也不是公开用例
    assert [_plain_args(c.args) for c in a] == [_plain_args(c.args) for c in a_again]
    assert [c.description for c in a] == [c.description for c in b]
    assert [_plain_args(c.args) for c in a] != [_plain_args(c.args) for c in b]
    public = {_plain_args(c.args) for c in ex.cases}
    assert sum(_plain_args(c.args) not in public for c in a) >= 2    # 边界情况（如 T = 1）可以和公开用例相同
    # 参考实现在隐藏用例上通过 check()（也就是说答案卷在任何种子下都能满分的前提）
    assert check(exercise_id, ex.reference, cases=a).passed


def test_wrong_answer_fails_hidden_cases_under_every_seed():
    def wrong_padding_mask(lengths, max_len):                      # <= 多算了一个位置
        return (torch.arange(max_len)[None, :] <= lengths[:, None])[:, None, :]

    for seed in ("one", "two", "three"):
        cases = EXERCISES["ch03.padding_mask"].generate(exercise_rng(seed, "ch03.padding_mask"))
        assert not check("ch03.padding_mask", wrong_padding_mask, cases=cases).passed


def test_runner_executes_only_definitions():
    tree = ast.parse("import math\nfrom torch import nn\nBOS, EOS = 1, 2\nPAD = numerals.PAD_ID\n"
                     "model = train(epochs=100)\nx = q_all[0]\nprint('hi')\nwhile True:\n    pass\n"
                     "def my_f(x):\n    return x\nclass Helper:\n    pass\nsq = lambda t: t * t\n")
    kept = [type(n).__name__ for n in definitions(tree)]
    assert kept == ["Import", "ImportFrom", "Assign", "Assign", "FunctionDef", "ClassDef", "Assign"]


def test_feedback_does_not_reveal_inputs_or_expected_values():
    expected = (torch.tensor([[0.123456, 0.654321]]), torch.tensor([[0.25, 0.75]]))
    got = (np.array([[0.123456, 0.654321]]), np.array([[0.3, 0.7]]))
    message = explain(expected, got, 1e-6, 1e-5)
    assert message.startswith("第 2 个返回值：数值与期望的不同")
    assert "0.25" not in message and "0.75" not in message and "0.1234" not in message
    assert "形状与期望的不同" in explain(np.zeros((2, 3)), np.zeros((3, 2)))
    assert "(2, 3)" not in explain(np.zeros((2, 3)), np.zeros((3, 2)))
    assert "布尔" in explain(np.ones((2, 2), dtype=bool), np.ones((2, 2)))
    assert "NaN" in explain(np.zeros(3), np.array([0.0, np.nan, 1.0]))
    assert "None" in explain(np.zeros(3), None)


def test_grading_cases_keep_expected_outputs_on_the_instructor_side():
    cases = grading_cases("ch03.causal_mask", "s")
    public = EXERCISES["ch03.causal_mask"].cases
    assert [c.hidden for c in cases] == [False] * len(public) + [True] * (len(cases) - len(public))
    assert all(np.array_equal(np.asarray(c.expected), np.tril(np.ones((c.args[0],) * 2, dtype=bool)))
               for c in cases)


def test_student_ids_from_file_names_or_regex(tmp_path):
    for name in ("alice.ipynb", "sub/bob_20231234_ch07.ipynb", ".DS_Store", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    files = submission_files(tmp_path)
    assert [f.name for f in files] == ["alice.ipynb", "notes.txt", "bob_20231234_ch07.ipynb"]
    assert student_ids(files, tmp_path, None) == ["alice", "notes", "bob_20231234_ch07"]
    assert student_ids(files, tmp_path, r"_(?P<id>\d{8})_") == ["alice", "notes", "20231234"]
    assert student_ids(files[:1] * 2, tmp_path, None) == ["alice", "alice-2"]


def test_console_command_is_installed_and_documented():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["tfcourse"] == "tfcourse.instructor.cli:main"
    # 教师指南在 docs/instructors.md，README 的第一屏链到它
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/instructors.md)" in "\n".join(readme.splitlines()[:30])
    guide = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    for text in ("tfcourse assign ch07 --out dist/", "tfcourse grade ch07 submissions/", "make book STUDENT=1",
                 "--seed SECRET", "bubblewrap", "--unsafe-no-sandbox", "kernel.apparmor_restrict_unprivileged_userns=0"):
        assert text in guide, text


def test_runner_knows_which_names_skipped_statements_would_bind():
    from tfcourse.instructor.runner import bound_names

    tree = ast.parse("x = f()\nfor i, (a, b) in pairs:\n    total = a\nwith open(p) as fh, lock:\n    data = fh.read()\n"
                     "if flag:\n    import json as js, os.path\n    def helper():\n        local = 1\nelse:\n"
                     "    y: int = 2\ntry:\n    z = 1\nexcept E as err:\n    pass\n[w for w in range(3)]\n"
                     "(n := 5)\nq_all[0] = 1\nself.k += 1\n")
    names = set().union(*(bound_names(node) for node in tree.body))
    # 函数体和推导式里的名字不是全局的；except … as err 的 err 在块末被删掉；下标和属性赋值不绑定名字
    assert names == {"x", "i", "a", "b", "total", "fh", "data", "js", "os", "helper", "y", "z", "n"}


def test_name_error_hint_names_the_global_and_its_cell():
    from tfcourse.instructor.runner import skipped_name_hint

    skipped, failed = {"SCALE": [4, 9]}, {"tok": [2]}
    hint = skipped_name_hint(NameError("name 'SCALE' is not defined", name="SCALE"), skipped, failed,
                             "函数 my_f ")
    assert hint.startswith("函数 my_f 用到了全局名字 `SCALE`，它只在第 5、10 个单元里由一条评分时不执行的语句定义")
    assert "执行出错" in skipped_name_hint(NameError("x", name="tok"), skipped, failed, "函数 my_f ")
    assert skipped_name_hint(NameError("x", name="other"), skipped, failed, "函数 my_f ") is None
    assert skipped_name_hint(UnboundLocalError("x"), skipped, failed, "函数 my_f ") is None


def test_student_notebook_states_the_grading_rule():
    ch = load_chapter("ch03", ROOT / "book")
    nb = student_notebook(ch)
    original = [c for c in ch.notebook["cells"] if not is_solution(c)]
    first_md = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown")
    title = cell_source(nb["cells"][first_md])
    # 规则写在标题单元里（不增删单元）：只执行 import、定义和简单赋值，函数不要用只由别的语句算出来的全局变量
    assert title.startswith(cell_source(original[first_md]).rstrip())
    assert "只执行" in title and "`import`" in title and "简单赋值" in title and "全局名字" in title
    assert [cell_source(c) for i, c in enumerate(nb["cells"]) if i != first_md] == \
        [cell_source(c) for i, c in enumerate(original) if i != first_md]
