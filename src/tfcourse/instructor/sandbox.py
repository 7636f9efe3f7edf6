"""把每份提交关进沙箱：bubblewrap（bwrap，Debian 包 bubblewrap，不需要 root 或 Docker）。

沙箱里只挂上评分真正要用的东西（白名单，不是整个 /）：/usr（以及 /bin、/lib 这些指向它的链接）、
动态链接器的缓存与字体配置（/etc/ld.so.cache、/etc/fonts）、评分用的 Python（venv、它背后的解释器和装包的
地方）、课程包（各章的参考实现 tfcourse/exercises 被空目录盖住），都只读；/dev、/proc、空的 /tmp，以及这份提交
自己的工作目录（唯一可写的地方）。教师的家目录、/root、/home、/srv、/mnt、/var、提交与输出文件夹、仓库里的其他
文件夹都不在里面。没有网络（--unshare-net）。

资源上限（Limits）由评分进程自己在执行学生代码之前设好（runner.apply_limits），每个上限都有命令行选项。
进程数上限（RLIMIT_NPROC）管不住 root：以 root 评分时，学生进程在沙箱里换成一个没有特权的用户
（setpriv --reuid/--regid，每个同时评分的提交一个不同的 uid）；以普通用户评分时，bwrap 自己建的用户命名空间
让这个上限只数沙箱里的进程。
bwrap 起不来时不评分、说明原因和解决办法；只有教师明确要求（--unsafe-no-sandbox）时才不用沙箱。
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

UNSAFE_FLAG = "--unsafe-no-sandbox"

FIX_HINT = (
    "解决办法：没装 bubblewrap 的，装上 Debian/Ubuntu 的包 bubblewrap（sudo apt-get install bubblewrap）；"
    "装了却报 “No permissions to create new namespace”、“setting up uid map: Permission denied” 之类的，"
    "是这台机器不许普通用户创建用户命名空间（user namespace）：Debian 上 sudo sysctl kernel.unprivileged_userns_clone=1，"
    "Ubuntu 23.10 起 sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0（在容器里评分时，要让容器允许创建命名空间）。"
    f"确实要在没有沙箱的情况下评分（学生代码会以你的权限运行，能读写你的文件、访问网络），请明确加上 {UNSAFE_FLAG}。")

# 系统里学生进程要用的东西：/usr 整个只读；/etc 只挑动态链接器与字体的配置（matplotlib 要字体配置）
SYSTEM_DIRS = ("/usr",)
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/fonts")

# 以 root 评分时学生进程用的 uid：每个同时评分的提交一个（进程数上限按 uid 计数，互不相干）；
# 选在普通系统分配的范围之外，不会和真实用户重合。每个评分进程占 64 个（按进程号错开），
# 同时运行的几个 tfcourse grade（或并行的测试）也不会共用一个 uid
SANDBOX_UID_BASE = 1_990_000_000
UIDS_PER_PROCESS = 64


def parse_size(text: str) -> int:
    """'2G'、'512M'、'64k'、'1000' → 字节数。"""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", str(text))
    if not m:
        raise ValueError(f"看不懂的大小：{text!r}（例如 2G、512M、64K）")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def format_size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n} 字节"


@dataclass(frozen=True)
class Limits:
    """每份提交的上限。memory 是地址空间（RLIMIT_AS，torch 一导入就占 0.8G 左右的虚拟地址）；
    procs 是进程与线程数（RLIMIT_NPROC）；file_size 是它写的任何一个文件（RLIMIT_FSIZE）；
    cpu 是 CPU 秒数（RLIMIT_CPU，墙钟时间另由 --timeout 管）；output 是它打印的全部输出。"""
    memory: int = 2 << 30
    procs: int = 64
    file_size: int = 64 << 20
    cpu: int = 120
    output: int = 1 << 20

    def describe(self) -> str:
        return (f"内存 {format_size(self.memory)}、进程数 {self.procs}、单个文件 {format_size(self.file_size)}、"
                f"CPU {self.cpu} 秒、输出 {format_size(self.output)}")

    def as_dict(self) -> dict:
        return {"memory": self.memory, "procs": self.procs, "file_size": self.file_size, "cpu": self.cpu,
                "output": self.output}


class _UidPool:
    """同时评分的每份提交一个 uid（用完放回）；进程内共享，同一进程里同时评几个班也不会撞上。"""

    def __init__(self):
        self.used: set[int] = set()
        self.lock = threading.Lock()

    @staticmethod
    def base() -> int:
        return SANDBOX_UID_BASE + (os.getpid() % 1_000_000) * UIDS_PER_PROCESS

    def take(self) -> int:
        with self.lock:
            uid = self.base()
            while uid in self.used:
                uid += 1
            self.used.add(uid)
            return uid

    def give(self, uid: int) -> None:
        with self.lock:
            self.used.discard(uid)


UIDS = _UidPool()


@dataclass
class Sandbox:
    kind: str                         # "bwrap" 或 "none"
    reason: str = ""                  # 没有沙箱时的原因（中文）
    bwrap: str | None = None
    hidden: list[pathlib.Path] = field(default_factory=list)
    keep: list[pathlib.Path] = field(default_factory=list)   # 只读挂上的 Python 与课程包
    setpriv: str | None = None        # 以 root 评分时：在沙箱里换成无特权 uid 的 setpriv
    tmp_size: bool = False            # bwrap 支持 --size（给空的 /tmp 设大小；0.7 起）
    tmp_perms: bool = True            # bwrap 支持 --perms（让空的 /tmp 人人可写；0.5 起）

    @property
    def active(self) -> bool:
        return self.kind == "bwrap"

    @property
    def switches_uid(self) -> bool:
        return self.active and self.setpriv is not None

    def describe(self) -> str:
        if self.active:
            return ("沙箱：bubblewrap（只看得见 /usr、评分用的 Python 与课程包，只有本份提交的工作目录可写、"
                    "断网、看不到其他提交和你的文件）")
        return (f"⚠ 没有沙箱：{self.reason}。学生代码直接在本机以你的权限运行（能读写你的文件、访问网络），"
                "只有各自的工作目录、超时与资源上限是隔开的。装上 bubblewrap（apt-get install bubblewrap）后再评分更安全。")

    @staticmethod
    def _system() -> list[tuple[str, str]]:
        """系统部分：/usr、指向它的链接（不是链接的 /lib 这类目录照样只读挂上）、/etc 里挑出的几样。"""
        out: list[tuple[str, str]] = [("ro", d) for d in SYSTEM_DIRS if os.path.isdir(d)]
        for link in SYSTEM_LINKS:
            if os.path.islink(link):
                out.append(("symlink", f"{link} -> {os.readlink(link)}"))
            elif os.path.isdir(link):
                out.append(("ro", link))
        return out + [("ro", f) for f in ETC_FILES if os.path.exists(f)]

    def mounts(self, workdir: pathlib.Path | None = None) -> list[tuple[str, str]]:
        """沙箱里看得见的东西：(方式, 路径)，方式是 ro（只读）、rw（可写）、dev、proc、tmpfs（空的）、symlink、hidden。"""
        out = self._system() + [("dev", "/dev"), ("proc", "/proc"), ("tmpfs", "/tmp")]
        out += [("ro", str(p)) for p in _outermost(self.keep) if not _covered(p, SYSTEM_DIRS)]
        out += [("hidden", str(p)) for p in self.hidden]
        if workdir is not None:
            out.append(("rw", str(pathlib.Path(workdir).resolve())))
        return out

    def command(self, argv: list[str], workdir: pathlib.Path, uid: int | None = None) -> list[str]:
        """bwrap 的命令行。uid：以 root 评分时学生进程换成的 uid（None 表示不换）。"""
        if not self.active:
            return argv
        work = pathlib.Path(workdir).resolve()
        args = [self.bwrap]
        made: set[str] = {"/"}

        def parents(path: str) -> None:
            # bwrap 为挂载点自动建的父目录是 0700，无特权的 uid 走不进去；--dir 建的是 0755
            parts = pathlib.PurePosixPath(path).parents
            for parent in reversed(parts):
                p = str(parent)
                if p not in made:
                    args.extend(["--dir", p])
                    made.add(p)

        for kind, what in self._system():
            if kind == "symlink":
                link, target = what.split(" -> ", 1)
                args += ["--symlink", target, link]
                made.add(link)
            else:
                parents(what)
                args += ["--ro-bind", what, what]
                made.add(what)
        args += ["--dev", "/dev", "--proc", "/proc"]
        args += (["--size", str(256 << 20)] if self.tmp_size else []) + \
            (["--perms", "1777"] if self.tmp_perms else []) + ["--tmpfs", "/tmp"]
        made |= {"/dev", "/proc", "/tmp"}
        # Python 与课程包：放在 /tmp 下的也在空的 /tmp 之后挂上
        for path in _outermost(self.keep):
            if _covered(path, SYSTEM_DIRS):
                continue
            parents(str(path))
            args += ["--ro-bind", str(path), str(path)]
            made.add(str(path))
        # 提交与输出文件夹（可能就在挂上的目录里）和参考实现盖住，最后才是唯一可写的工作目录
        for path in self.hidden:
            path = path.resolve()
            if path.is_dir() and any(path == k or k in path.parents for k in self.keep):
                args += ["--tmpfs", str(path)]
        parents(str(work))
        args += ["--bind", str(work), str(work), "--chdir", str(work),
                 "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                 "--die-with-parent", "--new-session"]
        if uid is not None and self.setpriv:
            args += ["--cap-add", "CAP_SETUID,CAP_SETGID", "--", self.setpriv, f"--reuid={uid}", f"--regid={uid}",
                     "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        else:
            args += ["--"]
        return args + argv


def _covered(path: pathlib.Path, roots) -> bool:
    return any(str(path) == r or str(path).startswith(r.rstrip("/") + "/") for r in roots)


def _outermost(paths: list[pathlib.Path]) -> list[pathlib.Path]:
    """去掉被别的路径包含的路径（挂了父目录，子目录就在里面）；按从浅到深排好。"""
    ordered = sorted({pathlib.Path(p) for p in paths}, key=lambda q: (len(q.parts), str(q)))
    keep: list[pathlib.Path] = []
    for p in ordered:
        if not any(k == p or k in p.parents for k in keep):
            keep.append(p)
    return keep


def package_source() -> pathlib.Path:
    """课程包 tfcourse 所在的目录（学生进程的 PYTHONPATH）。"""
    import tfcourse

    return pathlib.Path(tfcourse.__file__).resolve().parents[1]


def interpreter_paths() -> list[pathlib.Path]:
    """学生进程要用到的 Python 与课程包：venv（sys.prefix）、它背后的解释器（sys.base_prefix，以及 python 链接
    真正指向的安装目录）、搜索路径里装包的地方（site-packages、dist-packages，或在这些前缀之内的目录）、
    课程包目录 tfcourse 本身（不是它所在的仓库）。路径有符号链接的，链接所在的位置与真实位置都算。
    不含 /、/tmp、家目录这类整片的目录：只挂这些路径本身，从不挂它们的上级。"""
    exe = pathlib.Path(sys.executable)
    prefixes = [pathlib.Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)]
    prefixes += [exe.resolve().parents[1]]
    found = prefixes + [exe.parent, exe.resolve().parent, package_source() / "tfcourse"]
    real_prefixes = {q.resolve() for q in prefixes}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        q = pathlib.Path(entry).resolve()
        if q.name in ("site-packages", "dist-packages") or any(q == r or r in q.parents for r in real_prefixes):
            found.append(pathlib.Path(entry))
    broad = {pathlib.Path(p).resolve() for p in ("/", "/tmp", "/home", "/root", "/var", "/srv", "/mnt", "/opt",
                                                  "/media", "/etc", tempfile.gettempdir(), os.path.expanduser("~"))}
    keep: list[pathlib.Path] = []
    for p in found:
        for q in (pathlib.Path(os.path.abspath(p)), p.resolve()):
            if q in keep or q in broad:
                continue
            keep.append(q)
    return sorted(keep, key=lambda q: (len(q.parts), str(q)))


def _probe(box: Sandbox) -> tuple[bool, str]:
    uid = UIDS.take() if box.switches_uid else None
    try:
        with tempfile.TemporaryDirectory(prefix="tfcourse-probe-") as probe:
            if uid is not None:
                os.chown(probe, uid, uid)
            try:
                done = subprocess.run(box.command(["/bin/sh", "-c", "echo ok > probe"], pathlib.Path(probe), uid),
                                      capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return False, str(exc)
            ok = done.returncode == 0 and (pathlib.Path(probe) / "probe").exists()
            why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"退出码 {done.returncode}"
            return ok, why
    finally:
        if uid is not None:
            UIDS.give(uid)


def detect(unsafe_no_sandbox: bool = False, hidden: list[pathlib.Path] | None = None) -> Sandbox:
    """默认必须有能用的 bubblewrap，否则抛出 InstructorError（说明原因与解决办法）；
    unsafe_no_sandbox=True（命令行 --unsafe-no-sandbox）时不用沙箱。"""
    from .chapters import InstructorError

    if unsafe_no_sandbox:
        return Sandbox("none", f"教师用 {UNSAFE_FLAG} 要求不用沙箱")
    exe = shutil.which("bwrap")
    if exe is None:
        raise InstructorError("不能评分：这台机器上没有 bubblewrap（找不到 bwrap 命令），学生代码没法关进沙箱。" + FIX_HINT)
    setpriv = None
    if os.geteuid() == 0:
        # root 不受进程数上限约束：学生进程要换成无特权的 uid
        setpriv = shutil.which("setpriv") or ("/usr/bin/setpriv" if os.path.exists("/usr/bin/setpriv") else None)
        if setpriv is None or not setpriv.startswith("/usr/"):
            raise InstructorError("不能评分：你以 root 评分，学生进程要换成无特权的用户才管得住进程数，"
                                  "这需要 /usr/bin/setpriv（Debian/Ubuntu 的包 util-linux）。"
                                  "装上 util-linux，或以普通用户评分。")
    # 各章的参考实现（tfcourse/exercises/）也盖住：学生代码读不到它的源码（runner 另外拦下了它的导入）
    references = package_source() / "tfcourse" / "exercises"
    try:
        helptext = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        helptext = ""
    box = Sandbox("bwrap", bwrap=exe, hidden=[pathlib.Path(p) for p in (hidden or [])] + [references],
                  keep=interpreter_paths(), setpriv=setpriv, tmp_size="--size" in helptext,
                  tmp_perms="--perms" in helptext)
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
