"""找到随 PyPI 包一起安装的数据文件，核对 SHA-256；缺包或文件被改动时给出中文说明（说清要装什么）。"""
from __future__ import annotations

import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path


class DataUnavailableError(RuntimeError):
    """课程需要的离线数据或权重不在本机（没装对应的包，或文件与记录的 SHA-256 不符）。"""


def package_dir(package: str, pip_name: str) -> Path:
    """已安装包 `package` 的目录（不导入它）；没装就抛 DataUnavailableError，告诉读者 pip 装什么。"""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataUnavailableError(
            f"找不到 Python 包 {package}：本章的数据随 PyPI 包 {pip_name} 一起安装。"
            f"请运行  pip install {pip_name}  （或在仓库根目录运行 make install），然后重启内核。"
        )
    return Path(list(spec.submodule_search_locations)[0])


@lru_cache(maxsize=None)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verified_file(package: str, pip_name: str, relpath: str, sha256: str) -> Path:
    """包 `package` 里的文件 `relpath`，内容的 SHA-256 须等于 `sha256`。"""
    path = package_dir(package, pip_name) / relpath
    if not path.is_file():
        raise DataUnavailableError(
            f"包 {package} 里缺少文件 {relpath}（找的是 {path}）。请重新安装：pip install --force-reinstall {pip_name}"
        )
    st = path.stat()
    got = _sha256(path, st.st_size, st.st_mtime_ns)
    if got != sha256:
        raise DataUnavailableError(
            f"{path} 的 SHA-256 是 {got[:16]}…，课程记录的是 {sha256[:16]}…：文件被改动过或版本不同。"
            f"请重新安装课程锁定的版本：pip install --force-reinstall -c constraints.txt {pip_name}"
        )
    return path
