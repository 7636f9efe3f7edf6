"""笔记本里的那条路，在真的 JupyterLab 里走一遍：网站上的小部件从网站取运行时和权重，笔记本里没有网站，
前端第一次要用模型时发一条小部件消息，Python 一侧（widgets.live.LiveModels）回运行时的源码和权重。
这里起一个 JupyterLab（本机、临时目录、不碰用户的设置），在 Chromium 里打开一本笔记本、运行它、
在评论框里打字，核对页面上的好评概率就是 torch 算的那个，而且整个过程没有一个站外请求。"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

TYPED = "服务很好，下次还来"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        pytest.fail("没有安装 JupyterLab：它在 requirements.txt 里，请先运行 make install。")
    root = tmp_path_factory.mktemp("lab")
    cells = ["from tfcourse.widgets.live import ReviewAttention\n"
             "mine = ReviewAttention('房间很干净，早餐也丰富', title='你自己的评论')\nmine"]
    nb = {"cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": c, "outputs": [],
                     "execution_count": None} for i, c in enumerate(cells)],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (root / "live.ipynb").write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTER_RUNTIME_DIR=str(root / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(root / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"))
    port, token = _free_port(), "tfcourse-test"
    log = open(root / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--LabApp.news_url=",
         "--LabApp.expose_app_in_browser=True", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail("JupyterLab 没能启动：\n" + (root / "server.log").read_text(encoding="utf-8")[-2000:])
                time.sleep(0.3)
        else:
            pytest.fail("JupyterLab 60 秒内没有响应：\n" + (root / "server.log").read_text(encoding="utf-8")[-2000:])
        yield {"url": f"{base}/lab/tree/live.ipynb?token={token}", "base": base, "log": root / "server.log"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_readers_review_is_read_in_jupyterlab_with_weights_from_the_kernel(browser, lab):
    from tfcourse import webmodels

    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(180_000)
    page = ctx.new_page()
    outside, errors, models = [], [], []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith((lab["base"], "data:", "blob:"))
               else (outside.append(r.request.url), r.abort()))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: isinstance(f, bytes) and len(f) > 1_000_000
                                          and models.append(len(f))))
    try:
        page.goto(lab["url"])
        page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')"
                               " && document.querySelector('.jp-Notebook')", polling=500)
        try:                                          # 没有选过内核的笔记本会先问用哪个内核
            page.get_by_role("button", name="Select").click(timeout=15_000)
        except Exception:
            pass
        page.wait_for_function("window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status"
                               " === 'idle'", polling=500)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        box = page.locator(".tfc-live textarea")
        box.wait_for(state="visible")
        notes = page.locator("[data-testid=live-notes]")
        assert "浏览器里读了" not in notes.inner_text()            # 打开时是 Python 算好的视图，还没有取模型
        assert models == []
        box.fill(TYPED)
        page.wait_for_function("/浏览器里读了/.test(document.querySelector('[data-testid=live-notes]').innerText)",
                               polling=200)
        clf, _ = webmodels.reference_model("cls-bert")
        p = float(clf.predict_proba([TYPED])[0])
        shown = page.locator(".tfc-live").first.inner_text()
        printed = re.search(r"P\(好评\)\s*=\s*([\d.]+)", shown)
        assert printed, shown
        assert abs(float(printed.group(1)) - p) <= 0.0005 + 1e-6, (p, shown)   # 页面印 3 位小数
        assert models and min(models) > 1_800_000, models          # 权重经小部件消息从内核来（二进制附件）
        assert outside == [], f"JupyterLab 里的小部件试图访问站外地址：{outside}"
        assert errors == [], f"控制台报错：{errors}"
    finally:
        ctx.close()
