"""小部件前端与模型的约定：读者的操作要写回模型并调用 save_changes（活内核里据此同步回 Python）；
没有内核时 save_changes 抛错也不能影响显示。用一个记录调用的假模型在 Chromium 里直接驱动前端模块。"""
from __future__ import annotations

import base64
import json
import pytest

from tfcourse.widgets import AttentionHeatmap, RNNMemoryExplorer

HARNESS = """<!doctype html><html><head><meta charset="utf-8"></head><body><div id="root"></div>
<script type="module">
const state = %(state)s;
const handlers = {};
window.calls = { set: [], saves: 0 };
const model = {
  get: (k) => state[k],
  set: (k, v) => { state[k] = v; window.calls.set.push([k, v]); (handlers["change:" + k] || []).forEach((f) => f()); },
  save_changes: () => { window.calls.saves += 1; if (%(offline)s) throw new Error("no comm"); },
  on: (name, f) => { for (const n of name.split(" ")) (handlers[n] ||= []).push(f); },
  off: () => {},
};
const mod = await import("data:text/javascript;base64,%(code)s");
mod.default.render({ model, el: document.getElementById("root") });
window.ready = true;
</script></body></html>"""


def _open(browser, widget, offline: bool):
    state = {k: v for k, v in widget.get_state().items() if not k.startswith("_")}
    code = base64.b64encode(widget._esm.encode()).decode()     # 与页面里嵌入的前端模块完全相同
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(HARNESS % {"state": json.dumps(state), "code": code, "offline": json.dumps(offline)})
    page.wait_for_function("window.ready === true")
    return page, errors


@pytest.mark.parametrize("offline", [False, True])
def test_heatmap_click_writes_selection_back(browser, offline):
    page, errors = _open(browser, AttentionHeatmap([[0.2, 0.8], [0.6, 0.4]], ["甲", "乙"]), offline)
    page.locator('td[data-row="1"][data-col="0"]').click()
    calls = page.evaluate("window.calls")
    assert ["row", 1] in calls["set"] and ["col", 0] in calls["set"] and calls["saves"] >= 1
    assert page.locator("[data-testid=selected-weight]").inner_text() == "0.600"
    page.locator("th.tfc-rowhead").first.click()             # 点行首：只选行
    assert page.evaluate("window.calls.set.slice(-2)") == [["row", 0], ["col", -1]]
    assert errors == []
    page.close()


@pytest.mark.parametrize("offline", [False, True])
def test_explorer_slider_writes_index_back(browser, offline):
    page, errors = _open(browser, RNNMemoryExplorer(max_len=30), offline)
    slider = page.locator("[data-testid=length]")
    slider.focus()
    page.keyboard.press("End")
    calls = page.evaluate("window.calls")
    assert ["length", 30] in calls["set"] and calls["saves"] >= 1
    assert errors == []
    page.close()
