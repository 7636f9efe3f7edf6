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


def colab_cell_source() -> str:
    url, branch = repository_url()
    return (
        "# Colab 专用：安装课程包 tfcourse 与中文字体；在本地、Binder 和网站构建中这一格什么也不做。\n"
        "# （由 tools/nbtool.py sync 根据 _config.yml 的 repository.url 生成，请勿手改。）\n"
        "import subprocess, sys\n"
        "if \"google.colab\" in sys.modules:\n"
        "    # --no-deps：不替换 Colab 自带的 torch、numpy 与 ipywidgets\n"
        f"    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\", \"--no-deps\",\n"
        f"                    \"tfcourse @ git+{url}@{branch}\", \"anywidget==0.11.0\", \"psygnal\"], check=True)\n"
        "    subprocess.run(\"apt-get -qq install -y fonts-noto-cjk > /dev/null\", shell=True, check=True)"
    )


def chapter_notebooks() -> list[pathlib.Path]:
    return sorted((ROOT / "book").glob("p*/ch*.ipynb"))


def _colab_cell() -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "colab-setup",
        "metadata": {"tags": ["remove-cell", COLAB_TAG]},
        "outputs": [],
        "source": colab_cell_source(),
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
    elif "".join(nb["cells"][0]["source"]) != colab_cell_source():
        found.append("Colab 安装单元与 _config.yml 的仓库地址不一致")
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("outputs") or cell.get("execution_count"):
            found.append(f"单元 {i} 带有输出或执行计数")
    return found


def sync(path) -> None:
    nb = _load(path)
    if _has_colab_cell(nb):
        nb["cells"][0] = _colab_cell()
    else:
        nb["cells"].insert(0, _colab_cell())
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
