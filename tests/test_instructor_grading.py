"""真正运行提交的评分测试：每章答案卷满分、空白卷零分；一个合成的班级用两个种子评分，得分完全相同；
学生版网站里没有参考答案。

每份提交在新进程里运行（有 bubblewrap 时关在沙箱里）；超时默认 40 秒，机器很忙时可用环境变量
TFCOURSE_TEST_TIMEOUT 调大。
"""
import csv
import json
import os
import pathlib
import socket
import subprocess
import sys
import threading

import pytest

from tfcourse.instructor.assign import assign
from tfcourse.instructor.chapters import cell_source, chapters_with_exercises, load_chapter
from tfcourse.instructor.grade import grade_class, summary
from tfcourse.instructor.sandbox import detect

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = float(os.environ.get("TFCOURSE_TEST_TIMEOUT", "40"))


def _rows(out: pathlib.Path) -> dict[str, dict]:
    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def _set_cell(nb: dict, index: int, source: str) -> dict:
    nb = json.loads(json.dumps(nb))
    nb["cells"][index]["source"] = source
    return nb


def _write(path: pathlib.Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize("key", chapters_with_exercises())
def test_answer_key_scores_full_marks_and_untouched_notebook_zero(key, tmp_path):
    ch = assign(key, tmp_path / "dist", ROOT / "book")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "key.ipynb").write_bytes((tmp_path / "dist" / "solved" / ch.filename).read_bytes())
    (subs / "blank.ipynb").write_bytes((tmp_path / "dist" / "student" / ch.filename).read_bytes())
    result = grade_class(key, subs, tmp_path / "grades", seed=f"secret-{key}", jobs=2, timeout=TIMEOUT,
                         book=ROOT / "book")
    rows = _rows(tmp_path / "grades")
    n = len(ch.exercises)
    assert rows["key"]["score"] == rows["key"]["max_score"] == str(n), rows["key"]
    assert rows["blank"]["score"] == "0" and rows["blank"]["note"] == "未作答", rows["blank"]
    assert summary(result).splitlines()[-1] == "1 passed, 1 failed"


class _Listener:
    """本机的一个 TCP 服务：数一数有没有人连进来。"""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.accepted += 1
                conn.close()
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def test_synthetic_class_graded_with_two_seeds(tmp_path):
    ch = assign("ch03", tmp_path / "dist", ROOT / "book")
    solved = json.loads((tmp_path / "dist" / "solved" / ch.filename).read_text(encoding="utf-8"))
    student = json.loads((tmp_path / "dist" / "student" / ch.filename).read_text(encoding="utf-8"))
    # 学生版与答案卷的单元一一对应：学生单元在两边是同一个位置
    cell = {s.id: i for s in ch.exercises for i, c in enumerate(student["cells"])
            if f"def {s.function}(" in cell_source(c)}
    subs = tmp_path / "subs"
    subs.mkdir()
    _write(subs / "key.ipynb", solved)
    _write(subs / "blank.ipynb", student)
    _write(subs / "wrong.ipynb", _set_cell(solved, cell["ch03.causal_mask"],
                                           "def my_causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).triu()\n"))
    _write(subs / "loop.ipynb", _set_cell(solved, cell["ch03.masked_attention"],
                                          "import time\n\ndef my_masked_attention(q, k, v, mask):\n"
                                          "    while True:\n        time.sleep(0.05)\n"))
    (subs / "broken.ipynb").write_text("这不是笔记本", encoding="utf-8")
    _write(subs / "syntax.ipynb", _set_cell(solved, cell["ch03.padding_mask"],
                                            "def my_padding_mask(lengths, max_len:\n    return None\n"))
    sentinel = tmp_path / "outside.txt"
    listener = _Listener()
    nosy = cell_source(solved["cells"][cell["ch03.causal_mask"]]).replace(
        "def my_causal_mask(T):",
        "def my_causal_mask(T):\n"
        "    import socket\n"
        "    try:\n"
        f"        open({str(sentinel)!r}, 'w').write('被改了')\n"
        "    except OSError:\n"
        "        pass\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1', {listener.port}), timeout=1).close()\n"
        "    except OSError:\n"
        "        pass")
    _write(subs / "nosy.ipynb", _set_cell(solved, cell["ch03.causal_mask"], nosy))

    results = {}

    def run(seed):
        results[seed] = grade_class("ch03", subs, tmp_path / f"grades-{seed}", seed=seed, jobs=2, timeout=TIMEOUT,
                                    book=ROOT / "book")

    threads = [threading.Thread(target=run, args=(s,)) for s in ("first-seed", "second-seed")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listener.close()
    assert set(results) == {"first-seed", "second-seed"}

    ids = [s.id for s in ch.exercises]
    expected = {"key": ("1", "1", "1"), "blank": ("0", "0", "0"), "wrong": ("1", "0", "1"),
                "loop": ("0", "0", "0"), "broken": ("0", "0", "0"), "syntax": ("1", "1", "0"),
                "nosy": ("1", "1", "1")}
    notes = {"blank": "未作答", "loop": "超时", "broken": "文件损坏", "syntax": "无法解析"}
    tables = [_rows(tmp_path / f"grades-{s}") for s in ("first-seed", "second-seed")]
    for rows in tables:
        assert set(rows) == set(expected)
        for student_id, points in expected.items():
            row = rows[student_id]
            assert tuple(row[i] for i in ids) == points, (student_id, row)
            assert row["max_score"] == "3"
            assert (notes.get(student_id, "") in row["note"]) and (bool(row["note"]) == (student_id in notes)), row
    assert [{k: r[k] for k in ids + ["score"]} for r in tables[0].values()] == \
        [{k: r[k] for k in ids + ["score"]} for r in tables[1].values()]

    out = tmp_path / "grades-first-seed"
    lines = summary(results["first-seed"]).splitlines()
    assert lines[-1] == "2 passed, 5 failed"
    assert "没有沙箱" in "\n".join(lines) or "沙箱：bubblewrap" in "\n".join(lines)
    gradescope = json.loads((out / "results" / "wrong.json").read_text(encoding="utf-8"))
    assert gradescope["score"] == 2 and gradescope["max_score"] == 3
    assert [t["score"] for t in gradescope["tests"]] == [1, 0, 1]
    feedback = (out / "feedback" / "wrong.md").read_text(encoding="utf-8")
    assert "❌ ch03.causal_mask" in feedback and "隐藏用例" in feedback and "2 / 3" in feedback
    assert "无法解析" in (out / "feedback" / "syntax.md").read_text(encoding="utf-8")
    if results["first-seed"].sandbox.active:
        assert not sentinel.exists(), "沙箱里的提交写到了自己的工作目录之外"
        assert listener.accepted == 0, "沙箱里的提交连上了本机的服务"


def test_sandbox_is_reported_honestly_when_missing(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    box = detect("auto")
    assert not box.active and "没有沙箱" in box.describe() and "bubblewrap" in box.describe()


def test_student_site_has_no_solution_text(tmp_path):
    """只构建一章（不执行笔记本）的学生版网站：网页与 _sources 里都没有参考答案；原书的源文件则能查出来。"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    tool = [sys.executable, str(ROOT / "tools" / "student_book.py")]
    src = tmp_path / "student"
    subprocess.run(tool + ["prepare", str(src), "--chapters", "ch01", "--no-execute"], check=True, env=env)
    jb = pathlib.Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jb), "build", str(src), "--builder", "html", "-q"], env=env, cwd=tmp_path,
                   capture_output=True)            # 只有一章：前言里指向其他章的链接会告警，这里不用 -W
    html = src / "_build" / "html"
    page = html / "book" / "p1-foundations" / "ch01-why-rnn-forgets.html"
    assert page.is_file() and (html / "_sources" / "book" / "p1-foundations" / "ch01-why-rnn-forgets.ipynb").is_file()
    assert "my_softmax" in page.read_text(encoding="utf-8")
    done = subprocess.run(tool + ["scan", str(html)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # 对照：把原书（带答案）的笔记本放进去，扫描必须报出来
    original = load_chapter("ch01", ROOT / "book").path
    (html / "_sources" / "leak.ipynb").write_bytes(original.read_bytes())
    done = subprocess.run(tool + ["scan", str(html)], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "leak.ipynb" in done.stderr
