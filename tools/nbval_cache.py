"""pytest 插件：nbval 执行章节时，顺手把执行结果存进 Jupyter Book 的执行缓存。

nbval 逐格执行每个笔记本（并在出错时让测试失败），但它不会把输出写回。这个插件在每个
单元执行后收下 nbval 捕获的输出，在最后一个单元执行完、内核关闭之前向内核要一份小部件状态
（ipywidgets 的 Widget.get_manager_state，与 nbclient 写进笔记本元数据的是同一种东西），
然后把"带输出的笔记本"登记进 jupyter-cache。随后的 `jupyter-book build` 在缓存里找到它，
就不再执行第二遍。

用法：pytest -p nbval_cache --nbval-lax --nb-cache _build/.jupyter_cache book/p*/
（tools/ 需要在 PYTHONPATH 里；Makefile 已经这样做。）只有全部单元都通过的笔记本才会入缓存。
"""
from __future__ import annotations

import copy
import fcntl
import json
import pathlib
import queue
import time

import nbformat
import pytest

WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
_MARK = "@@TFCOURSE-WIDGET-STATE@@"
_STATE_CODE = f"""
import sys as _s, json as _j
if "ipywidgets" in _s.modules:
    from ipywidgets import Widget as _W
    print("{_MARK}" + _j.dumps(_W.get_manager_state(drop_defaults=False)) + "{_MARK}")
del _s, _j
"""


def pytest_addoption(parser):
    parser.addoption("--nb-cache", default=None,
                     help="把 nbval 的执行结果登记到这个 jupyter-cache 目录（供 jupyter-book 复用）")


class _Recorder:
    def __init__(self, cache_path: pathlib.Path):
        self.cache_path = cache_path
        self.files: dict[str, dict] = {}        # 笔记本路径 -> {outputs, failed, started}

    def _entry(self, item):
        key = str(item.parent.fspath)
        return self.files.setdefault(key, {"outputs": {}, "failed": False, "started": time.perf_counter()})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if not hasattr(item, "cell_num") or not hasattr(item, "test_outputs"):
            return
        entry = self._entry(item)
        if report.failed:
            entry["failed"] = True
        if call.when == "call" and item.test_outputs is not None:
            entry["outputs"][item.cell_num] = copy.deepcopy(list(item.test_outputs))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        """文件的最后一个单元：在 nbval 关闭内核之前取小部件状态，然后写缓存。"""
        if not hasattr(item, "cell_num"):
            return
        if nextitem is not None and nextitem.parent is item.parent:
            return
        entry = self._entry(item)
        n_cells = sum(1 for c in item.parent.nb.cells if c.cell_type == "code")
        if entry["failed"] or len(entry["outputs"]) != n_cells:
            return
        state = _widget_state(item.parent.kernel)
        _store(self.cache_path, pathlib.Path(str(item.parent.fspath)), entry, state)


def _widget_state(kernel) -> dict | None:
    msg_id = kernel.execute_cell_input(_STATE_CODE, allow_stdin=False)
    kernel.await_reply(msg_id, timeout=60)
    text = []
    while True:
        try:
            msg = kernel.get_message(stream="iopub", timeout=10)
        except queue.Empty:
            break
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text.append(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    out = "".join(text)
    if _MARK not in out:
        return None
    return json.loads(out.split(_MARK)[1])


def _store(cache_path: pathlib.Path, path: pathlib.Path, entry: dict, state: dict | None) -> None:
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    nb = nbformat.read(str(path), as_version=4)      # 与 myst-nb 读到的完全相同（含单元元数据）
    count = 0
    code_index = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        count += 1
        outs = [nbformat.from_dict(dict(o)) for o in entry["outputs"][code_index]]
        for o in outs:
            if o.get("output_type") == "execute_result":
                o["execution_count"] = count
        cell.outputs = outs
        cell.execution_count = count
        code_index += 1
    if state and state.get("state"):
        nb.metadata["widgets"] = {WIDGET_STATE_MIME: state}
    cache_path.mkdir(parents=True, exist_ok=True)
    with open(cache_path.parent / ".jupyter_cache.lock", "w") as lock:   # 两个 xdist 进程不要同时写 sqlite
        fcntl.flock(lock, fcntl.LOCK_EX)
        cache = get_cache(str(cache_path))
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, str(path.resolve()),
                          data={"execution_seconds": time.perf_counter() - entry["started"], "by": "nbval"}),
            check_validity=False, overwrite=True,
        )


# nbval 在收到单元的执行回复之后，只等 5 秒下一条 iopub 消息（写死在 IPyNbCell 里）。机器忙的时候，
# 训练单元的进度条消息会在 iopub 队列里排队超过 5 秒，这个单元就被误判为超时（CI 上出现过）。
# 单元真正卡住时，由 --nbval-cell-timeout 负责。
OUTPUT_TIMEOUT = 120


def pytest_collection_modifyitems(items):
    for item in items:
        if hasattr(item, "output_timeout"):
            item.output_timeout = max(item.output_timeout, OUTPUT_TIMEOUT)


def pytest_configure(config):
    path = config.getoption("--nb-cache")
    if path:
        config.pluginmanager.register(_Recorder(pathlib.Path(path).resolve()), "tfcourse-nb-cache")
