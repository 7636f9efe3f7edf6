"""把每份提交关进沙箱：bubblewrap（bwrap，Debian 包 bubblewrap，不需要 root 或 Docker）。

沙箱里整个文件系统只读（--ro-bind / /），/tmp 是空的内存盘，只有这份提交自己的工作目录可写；
评分用的 Python（venv 与它背后的解释器）和课程包即使放在 /tmp 下，也在空的 /tmp 之后重新只读挂上；
提交所在的文件夹、评分输出文件夹和各章的参考实现（tfcourse/exercises）被空目录盖住（看不到别人的提交和参考答案）；
没有网络（--unshare-net）。
bwrap 起不来时不评分、说明原因和解决办法；只有教师明确要求（--unsafe-no-sandbox）时才不用沙箱。
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

UNSAFE_FLAG = "--unsafe-no-sandbox"

FIX_HINT = (
    "解决办法：没装 bubblewrap 的，装上 Debian/Ubuntu 的包 bubblewrap（sudo apt-get install bubblewrap）；"
    "装了却报 “No permissions to create new namespace”、“setting up uid map: Permission denied” 之类的，"
    "是这台机器不许普通用户创建用户命名空间（user namespace）：Debian 上 sudo sysctl kernel.unprivileged_userns_clone=1，"
    "Ubuntu 23.10 起 sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0（在容器里评分时，要让容器允许创建命名空间）。"
    f"确实要在没有沙箱的情况下评分（学生代码会以你的权限运行，能读写你的文件、访问网络），请明确加上 {UNSAFE_FLAG}。")


@dataclass
class Sandbox:
    kind: str                         # "bwrap" 或 "none"
    reason: str = ""                  # 没有沙箱时的原因（中文）
    bwrap: str | None = None
    hidden: list[pathlib.Path] = field(default_factory=list)
    keep: list[pathlib.Path] = field(default_factory=list)   # 空的 /tmp 之后重新只读挂上的路径

    @property
    def active(self) -> bool:
        return self.kind == "bwrap"

    def describe(self) -> str:
        if self.active:
            return "沙箱：bubblewrap（文件系统只读、只有本份提交的工作目录可写、断网、看不到其他提交）"
        return (f"⚠ 没有沙箱：{self.reason}。学生代码直接在本机以你的权限运行（能读写你的文件、访问网络），"
                "只有各自的工作目录与超时是隔开的。装上 bubblewrap（apt-get install bubblewrap）后再评分更安全。")

    def command(self, argv: list[str], workdir: pathlib.Path) -> list[str]:
        if not self.active:
            return argv
        work = str(pathlib.Path(workdir).resolve())
        # bwrap 按顺序挂载：先整个文件系统只读、空的 /tmp，再把 Python 与课程包挂回来，
        # 然后盖住提交与输出文件夹（它们可能就在挂回来的项目里），最后才是唯一可写的工作目录
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in self.keep:
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        for path in self.hidden:
            if path.exists():
                args += ["--tmpfs", str(path.resolve())]
        args += ["--bind", work, work, "--chdir", work,
                 "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session"]
        return args + argv


def package_source() -> pathlib.Path:
    """课程包 tfcourse 所在的目录（学生进程的 PYTHONPATH）。"""
    import tfcourse

    return pathlib.Path(tfcourse.__file__).resolve().parents[1]


def interpreter_paths() -> list[pathlib.Path]:
    """学生进程要用到的地方：venv（sys.prefix）、它背后的解释器（sys.base_prefix，以及 python 链接真正指向的
    安装目录）、Python 的搜索路径和课程包。路径有符号链接的，链接所在的位置与真实位置都算。按从浅到深排好
    （先挂父目录，子目录后挂才不会被盖住）；不含 / 和 /tmp 本身（那会把空的 /tmp 又变回真的 /tmp）。"""
    exe = pathlib.Path(sys.executable)
    found = [pathlib.Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)]
    found += [exe.parent, exe.resolve().parent, exe.resolve().parents[1], package_source()]
    found += [pathlib.Path(p) for p in sys.path if p and os.path.isdir(p)]
    tmp_roots = {pathlib.Path("/tmp").resolve(), pathlib.Path(tempfile.gettempdir()).resolve()}
    keep: list[pathlib.Path] = []
    for p in found:
        for q in (pathlib.Path(os.path.abspath(p)), p.resolve()):
            if q in keep or q == pathlib.Path("/") or any(q == t or q in t.parents for t in tmp_roots):
                continue
            keep.append(q)
    return sorted(keep, key=lambda q: (len(q.parts), str(q)))


def _probe(box: Sandbox) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="tfcourse-probe-") as probe:
        try:
            done = subprocess.run(box.command(["/bin/sh", "-c", "echo ok > probe"], pathlib.Path(probe)),
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)
        ok = done.returncode == 0 and (pathlib.Path(probe) / "probe").exists()
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"退出码 {done.returncode}"
        return ok, why


def detect(unsafe_no_sandbox: bool = False, hidden: list[pathlib.Path] | None = None) -> Sandbox:
    """默认必须有能用的 bubblewrap，否则抛出 InstructorError（说明原因与解决办法）；
    unsafe_no_sandbox=True（命令行 --unsafe-no-sandbox）时不用沙箱。"""
    from .chapters import InstructorError

    if unsafe_no_sandbox:
        return Sandbox("none", f"教师用 {UNSAFE_FLAG} 要求不用沙箱")
    exe = shutil.which("bwrap")
    if exe is None:
        raise InstructorError("不能评分：这台机器上没有 bubblewrap（找不到 bwrap 命令），学生代码没法关进沙箱。" + FIX_HINT)
    # 各章的参考实现（tfcourse/exercises/）也盖住：学生代码读不到它的源码（runner 另外拦下了它的导入）
    references = package_source() / "tfcourse" / "exercises"
    box = Sandbox("bwrap", bwrap=exe, hidden=[pathlib.Path(p) for p in (hidden or [])] + [references],
                  keep=interpreter_paths())
    ok, why = _probe(box)
    if not ok:
        raise InstructorError(f"不能评分：bubblewrap（{exe}）在这台机器上起不来（{why}），学生代码没法关进沙箱。" + FIX_HINT)
    return box


def child_env(workdir: pathlib.Path) -> dict[str, str]:
    """学生进程的环境：HOME 指向工作目录，单线程（--jobs 个进程并行时不抢核），用同一份课程包。"""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "VIRTUAL_ENV", "TZ")}
    env.update({
        "HOME": str(workdir), "MPLCONFIGDIR": str(workdir / ".matplotlib"), "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": str(package_source()), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
        "TFCOURSE_GRADING": "1",
    })
    return env
