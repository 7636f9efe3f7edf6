"""一个有敌意的班：读教师的文件、连本机、开进程、占内存、写大文件、刷输出、改写结果文件、符号链接提交。

全班在一次评分里评完（第 2 章，答案卷只要一两秒）：每份提交都是答案卷，只把 my_attention_scores 换成
做坏事的版本（或在退出时改坏自己的结果文件）。每一份都要：全班照常评完、写出 grades.csv，答案卷满分，
种下的随机秘密不出现在任何输出文件里，备注写明发生了什么。
另有不跑沙箱的快速测试：结果文件按多种方式损坏，读取只会说「结果文件无效」，从不抛别的异常。
"""
import csv
import io
import json
import os
import pathlib
import secrets
import shutil
import socket
import tempfile
import threading
import zipfile

import numpy as np
import pytest

from tfcourse.instructor import InstructorError
from tfcourse.instructor.assign import assign
from tfcourse.instructor.chapters import cell_source
from tfcourse.instructor.grade import grade_class
from tfcourse.instructor.results import BadResult, load_arrays, load_report
from tfcourse.instructor.sandbox import UIDS, UIDS_PER_PROCESS, Limits, detect
from test_instructor_grading import _Listener  # 本机的 TCP 服务，数有没有人连进来

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = float(os.environ.get("TFCOURSE_TEST_TIMEOUT", "40"))


def _bwrap_problem():
    try:
        detect()
    except InstructorError as exc:
        return str(exc)
    return None


needs_bwrap = pytest.mark.skipif(_bwrap_problem() is not None, reason="这台机器上 bubblewrap 不能用")

# 测试用的上限比默认小，撞上得快；内存与文件的尝试最多到上限的 3 倍，上限失效时测试失败而不会吃光机器
LIMITS = Limits(memory=1536 << 20, procs=24, file_size=8 << 20, cpu=60, output=256 << 10)

HONEST = "    return Q @ K.T / np.sqrt(Q.shape[1])\n"
HEAD = "def my_attention_scores(Q, K):\n    import numpy as np, os, sys\n    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)\n"


def _hostile(body: str) -> str:
    return HEAD + "".join("    " + line + "\n" for line in body.strip("\n").splitlines()) + HONEST


def _at_exit(body: str) -> str:
    """答案正确，但在进程退出时（runner 写完结果之后）执行 body，改写工作目录里的结果文件。"""
    return ("import atexit\n\n@atexit.register\ndef _rewrite():\n    import numpy as np, os, io, zipfile, json\n"
            + "".join("    " + line + "\n" for line in body.strip("\n").splitlines())
            + "\n\n" + HEAD + HONEST)


@pytest.fixture
def planted_home():
    """种秘密的地方：教师真正的家目录里的一个临时文件夹（在 /tmp 之外：旧沙箱也盖住了 /tmp，那样测不出问题）。"""
    for base in (pathlib.Path.home(), pathlib.Path("/var/tmp")):
        try:
            home = pathlib.Path(tempfile.mkdtemp(prefix=".tfcourse-hostile-", dir=base))
            break
        except OSError:
            continue
    else:
        pytest.skip("找不到 /tmp 之外可写的地方来种秘密文件")
    yield home
    shutil.rmtree(home, ignore_errors=True)


CORRUPTIONS = {
    # 名字: 退出时执行的代码（工作目录就是当前目录）
    "truncated": "data = open('result.npz', 'rb').read()\nopen('result.npz', 'wb').write(data[: len(data) // 2])",
    "wrong_dtype": "np.savez('result.npz', a0=np.array(['x' * 50] * 4))",
    "object_array": "buf = io.BytesIO()\nnp.lib.format.write_array(buf, np.array([{'a': 1}, None], dtype=object), allow_pickle=True)\n"
                    "with zipfile.ZipFile('result.npz', 'w') as z:\n    z.writestr('a0.npy', buf.getvalue())",
    "huge_shape": "header = {'descr': '<f8', 'fortran_order': False, 'shape': (100000, 125000)}\n"
                  "buf = io.BytesIO()\nnp.lib.format.write_array_header_1_0(buf, header)\n"
                  "with zipfile.ZipFile('result.npz', 'w') as z:\n    z.writestr('a0.npy', buf.getvalue() + b'\\0' * 100)",
    "zip_bomb": "buf = io.BytesIO()\nnp.lib.format.write_array(buf, np.zeros(40 << 20, dtype=np.uint8))\n"
                "with zipfile.ZipFile('result.npz', 'w', zipfile.ZIP_DEFLATED) as z:\n    z.writestr('a0.npy', buf.getvalue())",
    "extra_members": "with zipfile.ZipFile('result.npz', 'a') as z:\n    for i in range(3000):\n"
                     "        z.writestr(f'x{i}.npy', b'')",
    "bad_member_name": "with zipfile.ZipFile('result.npz', 'a') as z:\n    z.writestr('../../evil.npy', b'')",
    "invalid_json": "open('result.json', 'w').write('{\"cells\": [')",
    "deep_nesting": "open('result.json', 'w').write('[' * 200000 + ']' * 200000)",
    "wrong_types": "r = json.load(open('result.json'))\nfor e in r['exercises'].values():\n"
                   "    for c in e['cases']:\n        c['value'] = {'k': 'array', 'key': 'a99999'}\n        c['seconds'] = 'soon'\n"
                   "json.dump(r, open('result.json', 'w'))",
    "symlink_result": "os.remove('result.json')\nos.symlink(SECRET_FILE, 'result.json')",
    "fifo_result": "os.remove('result.npz')\nos.mkfifo('result.npz')",
    "missing_results": "os.remove('result.json')\nos.remove('result.npz')",
}


@needs_bwrap
def test_hostile_class_is_graded_and_learns_nothing(tmp_path, monkeypatch, planted_home):
    secret = "SECRET-" + secrets.token_hex(16)
    home = planted_home
    listener = _Listener()
    try:
        fake_home = home / "home"
        fake_home.mkdir()
        (fake_home / "grades-last-term.csv").write_text(f"alice,{secret}\n", encoding="utf-8")
        monkeypatch.setenv("HOME", str(fake_home))
        course = home / "course"
        subs = course / "subs"
        subs.mkdir(parents=True)
        (course / "answers.txt").write_text(secret, encoding="utf-8")            # 提交文件夹旁边的文件
        # 一个"笔记本"形状的秘密文件：符号链接提交指向它，跟着链接评分的话，秘密会出现在错误信息里
        outside = home / "secret.ipynb"
        outside.write_text(json.dumps({"cells": [{"cell_type": "code", "source": f"raise RuntimeError('{secret}')"}]}),
                           encoding="utf-8")

        ch = assign("ch02", tmp_path / "dist", ROOT / "book")
        solved = json.loads((tmp_path / "dist" / "solved" / ch.filename).read_text(encoding="utf-8"))
        cell = next(i for i, c in enumerate(solved["cells"]) if "def my_attention_scores(" in cell_source(c))

        def write(name, source):
            nb = json.loads(json.dumps(solved))
            nb["cells"][cell]["source"] = source.replace("SECRET_FILE", repr(str(fake_home / "grades-last-term.csv")))
            (subs / f"{name}.ipynb").write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")

        (subs / "key.ipynb").write_text(json.dumps(solved, ensure_ascii=False), encoding="utf-8")
        write("read_home", _hostile(f"raise RuntimeError(open({str(fake_home / 'grades-last-term.csv')!r}).read())"))
        write("read_beside", _hostile(f"raise RuntimeError(open({str(course / 'answers.txt')!r}).read())"))
        write("list_home", _hostile(f"raise RuntimeError(str(os.listdir({str(home)!r})))"))
        write("loopback", _hostile(f"import socket\nsocket.create_connection(('127.0.0.1', {listener.port}), timeout=2).close()"))
        write("fork", _hostile(f"import time\nfor _ in range({3 * LIMITS.procs}):\n"
                               "    if os.fork() == 0:\n        time.sleep(3)\n        os._exit(0)"))
        write("memory", _hostile("hold = []\nfor _ in range(12):\n"
                                 f"    hold.append(np.zeros({3 * LIMITS.memory // 12}, dtype=np.uint8))"))
        write("big_file", _hostile(f"with open('big.bin', 'wb') as f:\n    for _ in range({3 * LIMITS.file_size >> 20}):\n"
                                   "        f.write(b'x' * (1 << 20))"))
        write("flood", _hostile(f"for _ in range({3 * LIMITS.output >> 16}):\n"
                                "    sys.stdout.write('y' * 65536)\n    sys.stdout.flush()"))
        write("fd_flood", _hostile(f"for _ in range({3 * LIMITS.output >> 16}):\n"
                                   "    os.write(1, b'y' * 65536)"))
        write("orphan", _hostile("import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True)\n"
                                 "raise RuntimeError('left a process behind')"))
        write("limits", _hostile("import resource\nraise RuntimeError('LIMITS ' + ' '.join(str(resource.getrlimit(r)[0]) "
                                 "for r in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE, "
                                 "resource.RLIMIT_CPU)))"))
        for name, body in CORRUPTIONS.items():
            write(f"rewrite_{name}", _at_exit(body))
        (subs / "symlink.ipynb").symlink_to(outside)

        out = course / "grades"
        grade_class("ch02", subs, out, seed="hostile", jobs=2, timeout=TIMEOUT, book=ROOT / "book", limits=LIMITS)
    finally:
        listener.close()

    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    expected = {"key", "read_home", "read_beside", "list_home", "loopback", "fork", "memory", "big_file", "flood",
                "fd_flood", "orphan", "limits", "symlink"} | {f"rewrite_{n}" for n in CORRUPTIONS}
    assert set(rows) == expected
    assert rows["key"]["score"] == "2" and rows["key"]["note"] == "", rows["key"]
    # 读不到的文件、连不上的本机：这道题不得分，另一道照常得分
    for name in ("read_home", "read_beside", "list_home", "loopback"):
        assert rows[name]["ch02.attention_scores"] == "0" and rows[name]["ch02.self_attention"] == "1", rows[name]
    assert listener.accepted == 0
    feedback = {p.stem: p.read_text(encoding="utf-8") for p in (out / "feedback").glob("*.md")}
    assert "FileNotFoundError" in feedback["read_home"] and "FileNotFoundError" in feedback["read_beside"]
    assert "FileNotFoundError" in feedback["list_home"]
    # 撞上上限的：只丢这道题，备注写明是哪个上限
    for name, cap in (("fork", "进程数超限"), ("memory", "内存超限"), ("big_file", "文件过大")):
        assert rows[name]["ch02.attention_scores"] == "0" and rows[name]["ch02.self_attention"] == "1", rows[name]
        assert cap in rows[name]["note"] and cap in feedback[name], (name, rows[name])
    # print 出来的洪水：超过上限的部分丢掉，题照样做完、照样得分，备注写明输出过多
    assert rows["flood"]["score"] == "2" and "输出过多" in rows["flood"]["note"], (rows["flood"], feedback["flood"])
    # 绕过 print 直接写文件描述符的：评分进程被停掉，先做完的那道题（self_attention）照样得分
    fd = rows["fd_flood"]
    assert fd["ch02.self_attention"] == "1" and fd["ch02.attention_scores"] == "0" and "输出过多" in fd["note"], fd
    assert f"LIMITS {LIMITS.memory} {LIMITS.procs} {LIMITS.file_size} {LIMITS.cpu}" in feedback["limits"]
    # 改写结果文件的：这份提交「结果文件无效」、0 分，全班照常
    for name in CORRUPTIONS:
        row = rows[f"rewrite_{name}"]
        assert row["score"] == "0" and "结果文件无效" in row["note"], (name, row)
    assert rows["symlink"]["score"] == "0" and "符号链接" in rows["symlink"]["note"], rows["symlink"]
    # 秘密不出现在任何输出文件里；沙箱用过的 uid 没有留下进程
    for path in out.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
    if os.geteuid() == 0:
        left = [p for p in pathlib.Path("/proc").iterdir() if p.name.isdigit() and _uid(p) in
                range(UIDS.base(), UIDS.base() + UIDS_PER_PROCESS)]
        assert not left, left


@needs_bwrap
def test_cpu_cap_stops_a_spinning_submission(tmp_path):
    """CPU 时间上限（比墙钟超时先到）：转圈的那道题被停下，备注「CPU 时间超限」；先做完的那道题照样得分；
    答案卷照样满分。"""
    ch = assign("ch02", tmp_path / "dist", ROOT / "book")
    solved = json.loads((tmp_path / "dist" / "solved" / ch.filename).read_text(encoding="utf-8"))
    cell = next(i for i, c in enumerate(solved["cells"]) if "def my_attention_scores(" in cell_source(c))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "key.ipynb").write_text(json.dumps(solved), encoding="utf-8")
    spin = json.loads(json.dumps(solved))
    spin["cells"][cell]["source"] = _hostile("while True:\n    pass")
    (subs / "spin.ipynb").write_text(json.dumps(spin), encoding="utf-8")
    limits = Limits(cpu=8)
    grade_class("ch02", subs, tmp_path / "grades", seed="cpu", jobs=2, timeout=max(TIMEOUT, 30), book=ROOT / "book",
                limits=limits)
    with open(tmp_path / "grades" / "grades.csv", encoding="utf-8-sig", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["key"]["score"] == "2"
    assert rows["spin"]["score"] == "1" and "CPU 时间超限" in rows["spin"]["note"], rows["spin"]
    assert rows["spin"]["ch02.self_attention"] == "1" and rows["spin"]["ch02.attention_scores"] == "0"
    assert "超时" not in rows["spin"]["note"]


def _uid(proc: pathlib.Path) -> int:
    try:
        return proc.stat().st_uid
    except OSError:
        return -1


# ------------------------------------------------------------------ 结果文件的读取：不跑沙箱的快速测试

def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_result_reader_refuses_every_corruption_without_raising(tmp_path):
    good = _npz(a0=np.arange(12, dtype=np.float32).reshape(3, 4), a1=np.array([True, False]))
    path = tmp_path / "result.npz"
    path.write_bytes(good)
    arrays = load_arrays(path, 8, 1 << 20)
    assert arrays["a0"].shape == (3, 4) and arrays["a1"].dtype == np.bool_
    rng = np.random.default_rng(0)
    cases = [good[:n] for n in rng.integers(0, len(good), 40)]
    for _ in range(60):                            # 随机改坏若干字节
        data = bytearray(good)
        for i in rng.integers(0, len(good), 3):
            data[i] = rng.integers(0, 256)
        cases.append(bytes(data))
    cases += [_npz(a0=np.array(["text"])), _npz(a0=np.zeros(3, dtype=np.complex128)),
              _npz(a0=np.zeros(2, dtype=[("x", "<f4")])), _npz(**{f"a{i}": np.zeros(1) for i in range(20)}),
              _npz(a0=np.zeros(1 << 18))]
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        raw = io.BytesIO()
        np.lib.format.write_array(raw, np.zeros(64 << 20, dtype=np.uint8))
        z.writestr("a0.npy", raw.getvalue())
    cases.append(bomb.getvalue())
    for data in cases:
        path.write_bytes(data)
        try:
            arrays = load_arrays(path, 8, 1 << 20)
        except BadResult:
            continue
        for arr in arrays.values():                # 读得出来的只能是普通的数、在预算之内
            assert arr.dtype.kind in "biuf" and arr.nbytes <= 1 << 20
    path.unlink()
    os.symlink(tmp_path / "elsewhere.npz", path)
    (tmp_path / "elsewhere.npz").write_bytes(good)
    with pytest.raises(BadResult):
        load_arrays(path, 8, 1 << 20)

    report = tmp_path / "result.json"
    good_report = {"cells": [], "exercises": {"e": {"missing": False, "cases": [
        {"status": "ok", "value": {"k": "tuple", "items": [{"k": "array", "key": "a0"}, {"k": "none"}]}, "seconds": 0.1}]}}}
    report.write_text(json.dumps(good_report))
    assert load_report(report, {"e": 1}, 1 << 20)["exercises"]["e"]["cases"][0]["value"]["k"] == "tuple"
    bad = ["", "{", "[" * 100000, json.dumps({"cells": "x"}), json.dumps({"exercises": {"e": {"cases": [{"status": "rm -rf"}]}}}),
           json.dumps({"exercises": {"e": {"cases": [{"status": "ok", "value": {"k": "array", "key": {"$": 1}}}]}}}),
           json.dumps({"exercises": {"e": {"cases": [{"status": "ok", "value": _nest(50)}]}}}), "\xff\xfe", "x" * (2 << 20)]
    for text in bad:
        report.write_bytes(text.encode("utf-8", errors="surrogateescape") if isinstance(text, str) else text)
        with pytest.raises(BadResult):
            load_report(report, {"e": 1}, 1 << 20)


def _nest(n: int) -> dict:
    node = {"k": "none"}
    for _ in range(n):
        node = {"k": "list", "items": [node]}
    return node


def test_sandbox_binds_only_the_allow_list():
    """bwrap 的命令行只挂 /usr、/etc 里挑出的几样、Python 与课程包：仓库的其他文件夹、家目录、/ 都不在里面。"""
    from tfcourse.instructor.sandbox import Sandbox, interpreter_paths

    box = Sandbox("bwrap", bwrap="bwrap", keep=interpreter_paths(), tmp_size=True)
    cmd = box.command(["python"], pathlib.Path("/tmp/work"), uid=None)
    sources = [pathlib.Path(cmd[i + 1]) for i, a in enumerate(cmd) if a in ("--ro-bind", "--bind")]
    assert pathlib.Path("/tmp/work") in sources
    home = pathlib.Path.home().resolve()
    for private in (ROOT / "tests", ROOT / "book", ROOT / "docs", home, pathlib.Path("/root"), pathlib.Path("/var"),
                    pathlib.Path("/srv"), pathlib.Path("/mnt"), pathlib.Path("/home")):
        private = private.resolve()
        for src in sources:
            assert not (src == private or src in private.parents), (src, private)
    # 系统部分：只有 /usr 与 /etc 里的动态链接器、字体配置
    for src in sources:
        if str(src).startswith("/etc"):
            assert src.name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts"), src
    # Python 本身在 /usr 下（Debian 的 python3）：/usr 照样挂上
    debian = Sandbox("bwrap", bwrap="bwrap", keep=[pathlib.Path("/usr"), pathlib.Path("/usr/lib/python3/dist-packages")])
    cmd = debian.command(["python"], pathlib.Path("/tmp/work"))
    assert cmd[cmd.index("--ro-bind") + 1] == "/usr" and "/" not in [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]


@needs_bwrap
def test_caps_too_tight_for_the_answer_key_write_nothing_and_name_the_flag(tmp_path, capsys):
    """上限紧到答案卷都评不了（--memory 64M，numpy 一导入就超）：不评分、不写文件，说明该调大哪个选项。"""
    from tfcourse.instructor import cli

    ch = assign("ch02", tmp_path / "dist", ROOT / "book")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "key.ipynb").write_bytes((tmp_path / "dist" / "solved" / ch.filename).read_bytes())
    argv = ["grade", "ch02", str(subs), "--seed", "s", "--book", str(ROOT / "book"), "--out", str(tmp_path / "g"),
            "--timeout", str(TIMEOUT)]
    assert cli.main(argv + ["--memory", "lots"]) == 1
    assert "看不懂的大小" in capsys.readouterr().err
    assert cli.main(argv + ["--memory", "64M"]) == 1
    err = capsys.readouterr().err
    assert "内存超限" in err and "调大 --memory" in err and "没有写出任何文件" in err, err
    assert not (tmp_path / "g").exists()
