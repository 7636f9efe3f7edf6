"""真正运行提交的评分测试：每章答案卷满分、空白卷零分；一个合成的班级用两个种子评分，得分完全相同；
学生版网站里没有参考答案。

每份提交在新进程里运行（有能用的 bubblewrap 时关在沙箱里；没有时这些测试明确地用 --unsafe-no-sandbox 评分，
专测沙箱的测试则跳过）；超时默认 40 秒，机器很忙时可用环境变量 TFCOURSE_TEST_TIMEOUT 调大。
"""
import csv
import functools
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

import pytest

from tfcourse.instructor import InstructorError, cli
from tfcourse.instructor.assign import assign
from tfcourse.instructor.chapters import cell_source, chapters_with_exercises, load_chapter, solved_notebook
from tfcourse.instructor.grade import grade_class, summary
from tfcourse.instructor.sandbox import detect

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = float(os.environ.get("TFCOURSE_TEST_TIMEOUT", "40"))


@functools.cache
def _sandbox_problem() -> str | None:
    """这台机器上 bubblewrap 能用就返回 None，否则返回原因。"""
    try:
        detect()
    except InstructorError as exc:
        return str(exc)
    return None


UNSAFE = _sandbox_problem() is not None          # 没有沙箱的机器上，评分测试明确地不用沙箱
needs_bwrap = pytest.mark.skipif(UNSAFE, reason=f"这台机器上 bubblewrap 不能用：{_sandbox_problem()}")


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
    # grade_class 评全班之前，先在同一个沙箱里评 solved_notebook(ch)（不是满分就抛出 InstructorError）；
    # assign 写出的答案卷就是它，所以这一步已经把发给教师的答案卷评了一遍（不是满分就不写任何文件，见
    # test_nothing_is_written_when_the_answer_key_fails_in_the_sandbox），不必再当作一份提交评第二遍。
    solved = json.loads((tmp_path / "dist" / "solved" / ch.filename).read_text(encoding="utf-8"))
    assert solved == json.loads(json.dumps(solved_notebook(ch), ensure_ascii=False))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "blank.ipynb").write_bytes((tmp_path / "dist" / "student" / ch.filename).read_bytes())
    result = grade_class(key, subs, tmp_path / "grades", seed=f"secret-{key}", jobs=2, timeout=TIMEOUT,
                         book=ROOT / "book", unsafe_no_sandbox=UNSAFE)
    rows = _rows(tmp_path / "grades")
    assert result.key_seconds > 0 and "评了答案卷：满分" in summary(result)
    assert rows["blank"]["score"] == "0" and rows["blank"]["note"] == "未作答", rows["blank"]
    assert rows["blank"]["max_score"] == str(len(ch.exercises))
    assert summary(result).splitlines()[-1] == "0 passed, 1 failed"


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
                                    book=ROOT / "book", unsafe_no_sandbox=UNSAFE)

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
    # 没有 bwrap：默认不评分，说明怎么装；只有明确要求时才不用沙箱，并如实说明
    with pytest.raises(InstructorError, match="apt-get install bubblewrap"):
        detect()
    box = detect(unsafe_no_sandbox=True)
    assert not box.active and "没有沙箱" in box.describe() and "bubblewrap" in box.describe()
    assert "--unsafe-no-sandbox" in box.describe()


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


# ------------------------------------------------------------------ 沙箱放在哪里都能用；评不出满分的答案卷就不评分

def _solved_and_student(dist: pathlib.Path, ch) -> tuple[dict, dict]:
    return (json.loads((dist / "solved" / ch.filename).read_text(encoding="utf-8")),
            json.loads((dist / "student" / ch.filename).read_text(encoding="utf-8")))


def _learner_cell(nb: dict, function: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if f"def {function}(" in cell_source(c))


@needs_bwrap
def test_project_and_interpreter_under_tmp_are_graded_in_the_sandbox():
    """项目克隆在 /tmp 下、评分用的 Python（venv）也在 /tmp 下：沙箱的空 /tmp 不能把它们盖住。"""
    ch = load_chapter("ch02", ROOT / "book")
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="tfcourse-clone-") as tmp:
        clone = pathlib.Path(tmp) / "course"
        shutil.copytree(ROOT / "src" / "tfcourse", clone / "src" / "tfcourse",
                        ignore=shutil.ignore_patterns("__pycache__", "checkpoints"))
        book = clone / "book" / ch.path.parent.name
        book.mkdir(parents=True)
        shutil.copyfile(ch.path, book / ch.filename)
        # 一个放在 /tmp 下的 venv；它自己不装包，用 .pth 借用当前环境装好的 numpy、torch……
        venv = clone / ".venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        import site

        site_dir = next((venv / "lib").glob("python*/site-packages"))
        (site_dir / "course-env.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(clone / "src")}
        where = subprocess.run([str(python), "-c", "import sys, tfcourse; print(sys.prefix); print(tfcourse.__file__)"],
                               env=env, cwd=clone, capture_output=True, text=True, check=True).stdout.split()
        assert where == [str(venv), str(clone / "src" / "tfcourse" / "__init__.py")]

        tool = [str(python), "-m", "tfcourse.instructor.cli"]
        subprocess.run(tool + ["assign", "ch02", "--out", "dist"], env=env, cwd=clone, check=True,
                       capture_output=True)
        solved, student = _solved_and_student(clone / "dist", ch)
        subs = clone / "subs"
        subs.mkdir()
        _write(subs / "key.ipynb", solved)
        _write(subs / "blank.ipynb", student)
        # 偷看的提交：看得见别人的提交就交白卷；沙箱盖住了提交文件夹（即使它在挂回来的项目里）就是满分
        i = _learner_cell(solved, "my_attention_scores")
        peek = cell_source(solved["cells"][i]) + (
            "\n_honest = my_attention_scores\n\ndef my_attention_scores(Q, K):\n    import os\n"
            f"    if os.path.exists({str(subs / 'key.ipynb')!r}):\n        return None\n    return _honest(Q, K)\n")
        _write(subs / "peek.ipynb", _set_cell(solved, i, peek))
        done = subprocess.run(tool + ["grade", "ch02", "subs", "--out", "g", "--seed", "s1", "--timeout", str(TIMEOUT)],
                              env=env, cwd=clone, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        rows = _rows(clone / "g")
        assert {k: (r["score"], r["max_score"]) for k, r in rows.items()} == \
            {"key": ("2", "2"), "blank": ("0", "2"), "peek": ("2", "2")}, rows
        assert "沙箱：bubblewrap" in done.stdout and done.stdout.splitlines()[-1] == "2 passed, 1 failed"


def _fake_bwrap(folder: pathlib.Path, body: str) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bwrap"
    script.write_text("#!/bin/bash\n" + body, encoding="utf-8")
    script.chmod(0o755)
    return folder


def _class(tmp_path: pathlib.Path, key: str = "ch02") -> tuple[pathlib.Path, list[str]]:
    ch = assign(key, tmp_path / "dist", ROOT / "book")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "key.ipynb").write_bytes((tmp_path / "dist" / "solved" / ch.filename).read_bytes())
    (subs / "blank.ipynb").write_bytes((tmp_path / "dist" / "student" / ch.filename).read_bytes())
    return subs, ["grade", key, str(subs), "--seed", "s1", "--book", str(ROOT / "book"), "--timeout", str(TIMEOUT)]


@needs_bwrap
@pytest.mark.parametrize("hide, says", [("interpreter", "No such file or directory"),
                                        ("packages", "No module named")])
def test_nothing_is_written_when_the_answer_key_fails_in_the_sandbox(hide, says, tmp_path, monkeypatch, capsys):
    """一个起得来、却看不到 Python（或它的包）的沙箱：先评的答案卷不是满分，于是不评分、不写任何文件。"""
    import numpy

    hidden = (pathlib.Path(sys.executable).resolve().parents[1] if hide == "interpreter"
              else pathlib.Path(numpy.__file__).resolve().parents[1])
    # 假的 bwrap：照常起沙箱，但在最后挂上工作目录之前把 Python 的安装目录（或 site-packages）盖住
    fake = _fake_bwrap(tmp_path / "bin", f"""args=()
for a in "$@"; do
  if [ "$a" = "--chdir" ] && [ -z "$hidden" ]; then args+=(--tmpfs {hidden}); hidden=1; fi
  args+=("$a")
done
exec {shutil.which("bwrap")} "${{args[@]}}"
""")
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    subs, argv = _class(tmp_path)
    out = tmp_path / "grades"
    assert cli.main(argv + ["--out", str(out)]) == 1
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith("错误：答案卷") and "0 / 2" in err and "没有写出任何文件" in err, err
    assert says in err, err                                   # 评分进程的输出摘录
    assert ("缺少这一章要用的包" if hide == "packages" else "看不到评分用的 Python") in err, err
    assert "Traceback" not in err.split("评分进程输出的最后几行")[0] and "passed" not in captured.out
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))


def test_no_unconfined_grading_unless_asked(tmp_path, monkeypatch, capsys):
    """bwrap 起不来（退出码 1）：默认不评分，说明原因与办法；只有 --unsafe-no-sandbox 才不用沙箱，并处处写明。"""
    fake = _fake_bwrap(tmp_path / "bin", 'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    subs, argv = _class(tmp_path)
    out = tmp_path / "grades"
    assert cli.main(argv + ["--out", str(out)]) == 1
    err = capsys.readouterr().err
    for text in ("bwrap: setting up uid map: Permission denied", "apt-get install bubblewrap",
                 "kernel.unprivileged_userns_clone=1", "kernel.apparmor_restrict_unprivileged_userns=0",
                 "--unsafe-no-sandbox"):
        assert text in err, (text, err)
    assert "Traceback" not in err and not out.exists()
    # 旧的 --sandbox none / auto 不再是悄悄绕过沙箱的办法
    assert cli.main(argv + ["--out", str(out), "--sandbox", "none"]) == 1
    assert "--unsafe-no-sandbox" in capsys.readouterr().err and not out.exists()

    assert cli.main(argv + ["--out", str(out), "--unsafe-no-sandbox"]) == 0
    stdout = capsys.readouterr().out
    assert "没有沙箱" in stdout and stdout.splitlines()[-1] == "1 passed, 1 failed"
    for student in ("key", "blank"):
        feedback = (out / "feedback" / f"{student}.md").read_text(encoding="utf-8")
        gradescope = json.loads((out / "results" / f"{student}.json").read_text(encoding="utf-8"))
        assert "这次评分没有使用沙箱" in feedback and "这次评分没有使用沙箱" in gradescope["output"]
    assert _rows(out)["key"]["score"] == "2"


def test_global_defined_only_by_a_skipped_statement_is_named_in_the_feedback(tmp_path):
    ch = assign("ch02", tmp_path / "dist", ROOT / "book")
    solved, _ = _solved_and_student(tmp_path / "dist", ch)
    i = _learner_cell(solved, "my_attention_scores")
    # 调用函数的赋值与 for 循环评分时都不执行：函数用到它们定义的全局名字时，反馈要指出名字和单元
    nb = _set_cell(solved, i, "SCALE = float(np.sqrt(1.0))\nfor _ in range(1):\n    OFFSET = 0.0\n\n"
                              "def my_attention_scores(Q, K):\n"
                              "    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)\n"
                              "    return Q @ K.T / np.sqrt(Q.shape[1]) * SCALE + OFFSET\n")
    subs = tmp_path / "subs"
    subs.mkdir()
    _write(subs / "global.ipynb", nb)
    grade_class("ch02", subs, tmp_path / "grades", seed="s", jobs=1, timeout=TIMEOUT, book=ROOT / "book",
                unsafe_no_sandbox=UNSAFE)
    assert _rows(tmp_path / "grades")["global"]["score"] == "1"
    feedback = (tmp_path / "grades" / "feedback" / "global.md").read_text(encoding="utf-8")
    assert (f"函数 my_attention_scores 用到了全局名字 `SCALE`，它只在第 {i + 1} 个单元里由一条评分时不执行的语句定义"
            in feedback), feedback
    assert "NameError" not in feedback


@pytest.mark.parametrize("unsafe", [False, True], ids=["bwrap", "unsafe-no-sandbox"])
def test_a_submission_cannot_borrow_the_reference_solution(unsafe, tmp_path):
    """学生函数调用参考实现（经 tfcourse.exercises 的登记表）或从磁盘读它的源码：评分时都拿不到，这道题不得分。
    笔记本里 `from tfcourse.exercises import check` 照常成功（那个单元不会被报错）。"""
    if not unsafe and UNSAFE:
        pytest.skip(f"这台机器上 bubblewrap 不能用：{_sandbox_problem()}")
    ch = assign("ch02", tmp_path / "dist", ROOT / "book")
    solved, _ = _solved_and_student(tmp_path / "dist", ch)
    i = _learner_cell(solved, "my_attention_scores")
    borrow = _set_cell(solved, i, "from tfcourse.exercises import EXERCISES\n\n"
                                  "def my_attention_scores(Q, K):\n"
                                  "    return EXERCISES['ch02.attention_scores'].reference(Q, K)\n")
    submodule = _set_cell(solved, i, "def my_attention_scores(Q, K):\n"
                                     "    from tfcourse.exercises import ch02\n"
                                     "    return ch02.attention_scores_reference(Q, K)\n")
    source = _set_cell(solved, i, "def my_attention_scores(Q, K):\n"
                                  "    import pathlib, tfcourse\n"
                                  "    p = pathlib.Path(tfcourse.__file__).parent / 'exercises' / 'ch02.py'\n"
                                  "    ns = {}\n"
                                  "    exec(p.read_text(encoding='utf-8'), ns)\n"
                                  "    return ns['attention_scores_reference'](Q, K)\n")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, nb in (("key", solved), ("borrow", borrow), ("submodule", submodule), ("source", source)):
        _write(subs / f"{name}.ipynb", nb)
    grade_class("ch02", subs, tmp_path / "grades", seed="s", jobs=2, timeout=TIMEOUT, book=ROOT / "book",
                unsafe_no_sandbox=unsafe)
    rows = _rows(tmp_path / "grades")
    full = str(len(ch.exercises))
    assert rows["key"]["score"] == full
    for name in ("borrow", "submodule") + (() if unsafe else ("source",)):   # 读源码只有沙箱拦得住
        assert rows[name]["ch02.attention_scores"] == "0", (name, rows[name])
        assert rows[name]["score"] == str(len(ch.exercises) - 1), (name, rows[name])
    feedback = (tmp_path / "grades" / "feedback" / "submodule.md").read_text(encoding="utf-8")
    assert "不能导入" in feedback, feedback
