"""每个被课程包和各章导入的第三方包，requirements.txt、Binder 与 Colab 三处都会装上。"""
import importlib.util
import pathlib
import re
import subprocess
import sys
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import imports  # noqa: E402
import nbtool  # noqa: E402

CHAPTERS = nbtool.chapter_notebooks()


def _dist(mod):
    return nbtool.DIST_NAMES.get(mod, mod.replace("_", "-")).lower()


def _names(path):
    out = set()
    for line in path.read_text(encoding="utf-8").split("\n"):
        m = re.match(r"([A-Za-z0-9_.\-]+)", line.split("#")[0].strip())
        if m:
            out.add(m.group(1).lower().split("==")[0])
    return out


def test_every_import_is_a_requirement():
    used = imports.package_third_party().union(*(imports.notebook_third_party(p) for p in CHAPTERS))
    assert {"torch", "numpy", "anywidget"} <= used                    # 扫描本身在工作
    missing = sorted(m for m in used if _dist(m) not in nbtool.requirement_specs())
    assert not missing, f"这些包被导入，却不在 requirements.txt 里：{missing}"
    pinned = _names(ROOT / "constraints.txt")
    assert not [m for m in used if _dist(m) not in pinned], "constraints.txt 过期：重新 pip freeze"


def test_binder_installs_exactly_the_requirements():
    lines = [ln.strip() for ln in (ROOT / "binder/requirements.txt").read_text(encoding="utf-8").split("\n")
             if ln.strip() and not ln.startswith("#")]
    assert "-r ../requirements.txt" in lines and "-c ../constraints.txt" in lines
    assert "-e ." in (ROOT / "binder/postBuild").read_text() or "pip install --no-deps -e ." in \
        (ROOT / "binder/postBuild").read_text()


def _colab_calls(monkeypatch, chapter):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a[0]))
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    real = importlib.util.find_spec
    # 假装 Colab 上除了它自带的包什么都没有：本章要的每个包都必须出现在安装命令里
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: real(name, *a) if name in nbtool.COLAB_PREINSTALLED else None)
    exec(compile(nbtool.colab_cell_source(chapter), "colab-cell", "exec"), {})
    return calls


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem[:4])
def test_colab_cell_installs_what_the_chapter_imports_and_keeps_torch(monkeypatch, chapter):
    import torch

    calls = _colab_calls(monkeypatch, chapter)
    pip_args = [str(a) for c in calls if isinstance(c, list) for a in c]
    installed = {re.split(r"[=<>@ ]", a)[0].lower() for a in pip_args}
    need = imports.notebook_third_party(chapter) - nbtool.COLAB_PREINSTALLED
    assert not [m for m in need if _dist(m) not in installed], (chapter.name, sorted(need), installed)
    torch_args = [a for a in pip_args if a.split("=")[0] == "torch"]
    assert torch_args in ([], [f"torch=={torch.__version__}"]), "Colab 的 torch 只能钉住、不能替换"
    assert not any(a.split("=")[0] in {"numpy", "ipywidgets"} for a in pip_args)
