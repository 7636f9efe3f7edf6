"""把每份提交关进沙箱：bubblewrap（bwrap，Debian 包 bubblewrap，不需要 root 或 Docker）。

沙箱里整个文件系统只读（--ro-bind / /），/tmp 是空的内存盘，只有这份提交自己的工作目录可写；
提交所在的文件夹和评分输出文件夹被空目录盖住（看不到别人的提交）；没有网络（--unshare-net）。
没有 bwrap、或 bwrap 在这台机器上起不来时，如实说明，学生代码就直接在本机运行。
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field


@dataclass
class Sandbox:
    kind: str                         # "bwrap" 或 "none"
    reason: str = ""                  # 没有沙箱时的原因（中文）
    bwrap: str | None = None
    hidden: list[pathlib.Path] = field(default_factory=list)

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
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for path in self.hidden:
            if path.exists():
                args += ["--tmpfs", str(path.resolve())]
        args += ["--tmpfs", "/tmp", "--bind", work, work, "--chdir", work,
                 "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session"]
        return args + argv


def detect(mode: str = "auto", hidden: list[pathlib.Path] | None = None) -> Sandbox:
    """mode：auto（有 bwrap 就用）、bwrap（必须用，否则报错）、none（不用沙箱）。"""
    hidden = [pathlib.Path(p) for p in (hidden or [])]
    if mode == "none":
        return Sandbox("none", "按 --sandbox none 的要求没有使用沙箱")
    exe = shutil.which("bwrap")
    if exe is None:
        box = Sandbox("none", "这台机器上没有 bubblewrap（找不到 bwrap 命令）")
    else:
        box = Sandbox("bwrap", bwrap=exe, hidden=hidden)
        with tempfile.TemporaryDirectory(prefix="tfcourse-probe-") as probe:
            try:
                done = subprocess.run(box.command(["/bin/sh", "-c", "echo ok > probe"], pathlib.Path(probe)),
                                      capture_output=True, text=True, timeout=30)
                ok = done.returncode == 0 and (pathlib.Path(probe) / "probe").exists()
                why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"退出码 {done.returncode}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                ok, why = False, str(exc)
        if not ok:
            box = Sandbox("none", f"bwrap 在这台机器上起不来（{why}）")
    if mode == "bwrap" and not box.active:
        from .chapters import InstructorError

        raise InstructorError(f"要求使用沙箱，但{box.reason}。")
    return box


def child_env(workdir: pathlib.Path) -> dict[str, str]:
    """学生进程的环境：HOME 指向工作目录，单线程（--jobs 个进程并行时不抢核），用同一份课程包。"""
    import tfcourse

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "VIRTUAL_ENV", "TZ")}
    src = str(pathlib.Path(tfcourse.__file__).resolve().parents[1])
    env.update({
        "HOME": str(workdir), "MPLCONFIGDIR": str(workdir / ".matplotlib"), "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
        "TFCOURSE_GRADING": "1",
    })
    return env
