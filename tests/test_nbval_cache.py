"""tools/nbval_cache.py：nbval 的执行结果要能被 jupyter-book（myst-nb 的缓存模式）原样复用。"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import nbformat
from jupyter_cache import get_cache

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _notebook(path: pathlib.Path, *sources: str) -> pathlib.Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# 测试")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, str(path))
    return path


def _run_nbval(nb_path: pathlib.Path, cache: pathlib.Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "nbval_cache", "--nbval-lax", "--nb-cache", str(cache),
         "-p", "no:cacheprovider", "--rootdir", str(nb_path.parent), str(nb_path)],
        capture_output=True, text=True, env=env, cwd=nb_path.parent, timeout=300,
    )


def test_passing_notebook_is_cached_with_outputs_and_widget_state(tmp_path):
    nb_path = _notebook(
        tmp_path / "ok.ipynb",
        "print('你好，缓存')",
        "from tfcourse.widgets import AttentionHeatmap\n"
        "heat = AttentionHeatmap([[0.25, 0.75], [0.5, 0.5]], ['甲', '乙'])\nheat",
        "heat.select(0, 1)\nheat.selected_weight",
    )
    cache_dir = tmp_path / "cache"
    proc = _run_nbval(nb_path, cache_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    cache = get_cache(str(cache_dir))
    source = nbformat.read(str(nb_path), as_version=4)
    record = cache.match_cache_notebook(source)                 # myst-nb 用同样的方式查找
    assert record.data["by"] == "nbval"
    _, merged = cache.merge_match_into_notebook(source)
    code = [c for c in merged.cells if c.cell_type == "code"]
    assert code[0].outputs[0]["text"] == "你好，缓存\n"
    assert "application/vnd.jupyter.widget-view+json" in code[1].outputs[0]["data"]
    assert code[2].outputs[0]["data"]["text/plain"] == "0.75"
    state = merged.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    heatmaps = [m for m in state.values() if m["state"].get("q_tokens") == ["甲", "乙"]]
    assert len(heatmaps) == 1 and heatmaps[0]["state"]["col"] == 1   # 末状态：执行后选中的格子
    assert "export default" in heatmaps[0]["state"]["_esm"]          # 前端代码随状态一起进页面


def test_failing_notebook_is_not_cached(tmp_path):
    nb_path = _notebook(tmp_path / "bad.ipynb", "x = 1", "assert x == 2, '故意失败'")
    cache_dir = tmp_path / "cache"
    proc = _run_nbval(nb_path, cache_dir)
    assert proc.returncode != 0
    cache = get_cache(str(cache_dir))
    assert cache.list_cache_records() == []


def test_cells_wait_long_enough_for_output_on_a_busy_machine(tmp_path):
    """nbval 默认只等 5 秒 iopub 消息；CI 上训练单元曾因此被误判超时。插件要把每个单元的等待放宽。"""
    nb_path = _notebook(tmp_path / "slow.ipynb", "x = 1")
    (tmp_path / "conftest.py").write_text(
        "def pytest_runtest_call(item):\n"
        "    if hasattr(item, 'cell_num'):\n"
        "        assert item.output_timeout >= 60, item.output_timeout\n", encoding="utf-8")
    proc = _run_nbval(nb_path, tmp_path / "cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
