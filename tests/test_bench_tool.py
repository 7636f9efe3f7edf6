"""tools/bench.py：各章的预算读自笔记本，运行时间读自章末的报告，超过预算 2/3 的章被标出来。"""
import pathlib
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import bench  # noqa: E402

from tfcourse.runtime import ChapterClock  # noqa: E402


def _nb(first: str, report: str | None):
    nb = nbformat.v4.new_notebook()
    last = nbformat.v4.new_code_cell("print(clock.report())")
    if report is not None:
        last.outputs = [nbformat.v4.new_output("stream", name="stdout", text=report + "\n")]
    nb.cells = [nbformat.v4.new_code_cell(first), last]
    return nb


def test_budget_and_time_come_from_the_chapter_itself():
    report = ChapterClock(chapter=13, budget_s=180).report()
    nb = _nb("clock = start_chapter(13, seed=0, budget_s=180)", report)
    assert bench.budget_of(nb) == 180
    assert bench.reported_seconds(nb) is not None and bench.reported_seconds(nb) < 5
    assert bench.budget_of(_nb("clock = start_chapter(2)", None)) == 60      # 默认预算
    assert bench.reported_seconds(_nb("clock = start_chapter(2)", None)) is None


def test_chapters_above_two_thirds_of_their_budget_are_flagged():
    rows = [dict(chapter=13, budget=180, seconds=121.0), dict(chapter=15, budget=180, seconds=119.0),
            dict(chapter=2, budget=60, seconds=41.0), dict(chapter=3, budget=60, seconds=None)]
    lines = bench.table(rows, "测试").splitlines()
    flagged = {ln.split()[0] for ln in lines if ln.rstrip().endswith("⚠")}
    assert flagged == {"ch13", "ch02"}
    assert any("没有找到运行时间" in ln for ln in lines if ln.startswith("ch03"))
    assert "2 章超过预算的 2/3" in lines[-1]
    assert "每章都在预算的 2/3 以内" in bench.table(rows[1:2], "测试")


def test_times_measured_two_at_a_time_are_not_flagged():
    rows = [dict(chapter=13, budget=180, seconds=135.0)]
    text = bench.table(rows, "两章同时执行", flag=False)
    assert "⚠" not in text and "超过预算" not in text and "ch13" in text
