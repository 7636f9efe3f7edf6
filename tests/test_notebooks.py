"""章节笔记本的结构检查：每章都有约定的部分、练习能自检、答案默认折叠、提交时不带输出。"""
from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import types

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtool  # noqa: E402


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = []
    for part in toc["parts"]:
        files += [c["file"] for c in part["chapters"]]
    return files


CHAPTERS = [f for f in _toc_files() if "/ch" in f]


def _cells(path: str) -> list[dict]:
    return json.loads((ROOT / f"{path}.ipynb").read_text(encoding="utf-8"))["cells"]


def _src(cell) -> str:
    return "".join(cell["source"])


def test_toc_lists_every_chapter_notebook_and_nothing_missing():
    on_disk = sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in nbtool.chapter_notebooks())
    assert on_disk == sorted(CHAPTERS)
    for f in _toc_files():
        assert (ROOT / f"{f}.ipynb").exists() or (ROOT / f"{f}.md").exists(), f


def test_preface_marks_exactly_the_published_chapters():
    text = (ROOT / "book" / "preface.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\S+) \| (\d+|[A-Z]) \| (.+?) \| (已上线|编写中) \|$", text, flags=re.M)
    number = lambda r: int(r[1]) if r[1].isdigit() else 16 + ord(r[1]) - ord("A") + 1   # 附录 A、B 是第 17、18 个笔记本
    assert [r[1] for r in rows] == [str(n) for n in range(1, 17)] + ["A", "B"]
    published = {number(r) for r in rows if r[3] == "已上线"}
    in_toc = {int(re.search(r"/ch(\d+)-", f).group(1)) for f in CHAPTERS}
    assert published == in_toc
    for _part, _n, title, mark in rows:
        if mark == "已上线":
            link = re.search(r"\]\(([^)]+)\)", title).group(1)
            assert (ROOT / "book" / link).exists(), link


def test_notebooks_have_no_outputs_and_current_colab_cell():
    assert nbtool.main(["nbtool", "check"]) == 0


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_the_house_structure(chapter):
    cells = _cells(chapter)
    md = "\n".join(_src(c) for c in cells if c["cell_type"] == "markdown")
    for heading in ("路标", "本章目标", "常见坑与自查", "练习", "小结", "下一篇"):
        assert re.search(rf"^#+ .*{heading}", md, flags=re.M), f"{chapter} 缺少「{heading}」一节"
    n = int(re.search(r"/ch(\d+)-", chapter).group(1))
    code = [c for c in cells if c["cell_type"] == "code" and nbtool.COLAB_TAG not in c["metadata"].get("tags", [])]
    assert re.search(rf"start_chapter\({n}\b", _src(code[0])), "第一个代码单元应调用 start_chapter"
    budget = re.search(r"budget_s\s*=\s*(\d+)", _src(code[0]))
    assert budget is None or int(budget.group(1)) in (60, 180), "预算只有两档：一般的章 60 秒，训练模型的章 180 秒"
    assert "clock.report()" in _src(code[-1]), "最后一个代码单元应打印本章运行时间"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_exercises_check_themselves_and_solutions_are_hidden(chapter):
    cells = _cells(chapter)
    checks = [c for c in cells if c["cell_type"] == "code" and re.search(r'\bcheck\("', _src(c))]
    solutions = [c for c in checks if "hide-input" in c["metadata"].get("tags", [])]
    assert solutions, "至少要有一道带参考答案的编程练习"
    for sol in solutions:
        assert sol["metadata"].get("jupyter", {}).get("source_hidden") is True   # Jupyter/Colab 里也折叠
        assert "assert result.passed" in _src(sol)
    attempts = [c for c in checks if c not in solutions]
    assert len(attempts) >= len(solutions), "每道练习都要有读者自己运行的检查单元"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_widget_cells_are_not_compared_by_nbval(chapter):
    for c in _cells(chapter):
        src = _src(c)
        if c["cell_type"] == "code" and re.search(r"^\w+ = (RNNMemoryExplorer|AttentionHeatmap|ScalingExplorer|PositionalEncodingExplorer|RopeExplorer)\(", src, re.M):
            assert "nbval-ignore-output" in c["metadata"].get("tags", []), src[:80]


HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


def _visible_code(chapter):
    """读者在网页上直接看到源码的代码单元（没有折叠、没有移除）。"""
    for i, c in enumerate(_cells(chapter)):
        if c["cell_type"] == "code" and not HIDDEN & set(c["metadata"].get("tags", [])):
            yield i, _src(c)


def _columns(line: str) -> int:
    """等宽字体里一行占几列：汉字、全角标点占两列（代码框的中文字体里它们是两个西文字符宽）。"""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_visible_code_fits_the_code_box(chapter):
    """看得见的代码每行 ≤ 80 列（汉字算两列；网页的代码框显示 78–80 列，更宽的行右边会被截掉）。"""
    wide = [f"单元 {i}：{line[:40]}…（{_columns(line)} 列）"
            for i, src in _visible_code(chapter) for line in src.splitlines() if _columns(line) > 80]
    assert not wide, f"{chapter} 有 {len(wide)} 行看得见的代码超过 80 列：\n" + "\n".join(wide[:10])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_checks_are_folded_out_of_the_lesson(chapter):
    """看得见的单元里最多 2 行 assert；只为核对而存在的代码放进折叠的核对单元（# 核对：… + ok(…)）。"""
    crowded = [(i, n) for i, src in _visible_code(chapter)
               if (n := sum(line.lstrip().startswith("assert") for line in src.splitlines())) > 2]
    assert not crowded, f"{chapter}：这些看得见的单元有超过 2 行 assert（单元序号, 行数）：{crowded}"
    for i, c in enumerate(_cells(chapter)):
        src = _src(c)
        if c["cell_type"] == "code" and src.lstrip().startswith("# 核对"):
            assert "hide-input" in c["metadata"].get("tags", []), f"{chapter} 单元 {i}：核对单元要折叠"
            assert c["metadata"].get("jupyter", {}).get("source_hidden") is True, f"{chapter} 单元 {i}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_generated_sentences_and_listings_show_no_code(chapter):
    """生成句子（say / display(Markdown(…))）与包源码展示（show_source）的单元只显示结果，不显示代码。"""
    for i, c in enumerate(_cells(chapter)):
        src = _src(c)
        if c["cell_type"] != "code":
            continue
        assert "inspect.getsource" not in src, f"{chapter} 单元 {i}：用 tfcourse.notebook.show_source 展示源码"
        if re.search(r"^\s*(say|show_source|display\(Markdown)\(", src, re.M):
            tags = set(c["metadata"].get("tags", []))
            assert tags & {"remove-input", "hide-input", "remove-cell"}, (
                f"{chapter} 单元 {i}：生成句子或展示源码的单元要加标签 remove-input：{src[:80]}")


def _run_colab_cell(monkeypatch, in_colab: bool) -> list:
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a[0]))
    if in_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(nbtool.colab_cell_source(), "colab-cell", "exec"), {})
    return calls


def test_colab_cell_does_nothing_outside_colab(monkeypatch):
    assert _run_colab_cell(monkeypatch, in_colab=False) == []


def test_colab_cell_installs_package_without_replacing_colab_torch(monkeypatch):
    calls = _run_colab_cell(monkeypatch, in_colab=True)
    pip = calls[0]
    url, branch = nbtool.repository_url()
    assert "--no-deps" in pip and f"tfcourse @ git+{url}@{branch}" in pip
    assert not any(str(a).split("=")[0] in {"torch", "ipywidgets", "numpy"} for a in pip)
    assert "fonts-noto-cjk" in calls[1]
