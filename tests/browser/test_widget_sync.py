"""小部件前端与模型的约定：读者的操作要写回模型并调用 save_changes（活内核里据此同步回 Python）；
没有内核时 save_changes 抛错也不能影响显示。用一个记录调用的假模型在 Chromium 里直接驱动前端模块。"""
from __future__ import annotations

import base64
import json
import pytest

from conftest import js_fixed

from tfcourse.widgets import AttentionHeatmap, PositionalEncodingExplorer, RNNMemoryExplorer, ScalingExplorer

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


def test_scaling_explorer_controls_show_python_numbers(browser):
    w = ScalingExplorer(d_k=4)
    page, errors = _open(browser, w, offline=True)
    slider = page.locator("[data-testid=d_index]")
    slider.focus()
    page.keyboard.press("End")                                 # d_k = 1024
    assert ["d_index", len(w.d_values) - 1] in page.evaluate("window.calls.set")
    w.set(d_k=1024, scaled=False)
    assert page.locator("[data-testid=var-dot]").inner_text() == js_fixed(w.readout()['var_dot'], 1)
    assert page.locator("[data-testid=grad-norm]").inner_text() == js_fixed(w.readout()['grad_norm'], 3)
    page.locator("[data-testid=scaled]").check()               # 打开缩放：梯度回来了
    assert ["scaled", True] in page.evaluate("window.calls.set")
    w.set(scaled=True)
    assert page.locator("[data-testid=grad-norm]").inner_text() == js_fixed(w.readout()['grad_norm'], 3)
    assert page.locator("[data-testid=max-weight]").inner_text() == js_fixed(w.readout()['max_weight'], 3)
    assert page.locator("[data-testid=q-grad-median]").inner_text() == js_fixed(w.readout()['q_grad_median'], 4)
    assert page.locator("[data-testid=q-grad-small]").inner_text() == js_fixed(w.readout()['q_grad_small'] * 100, 1) + "%"
    assert errors == []
    page.close()


def test_pe_explorer_table_click_selects_position_and_pair(browser):
    w = PositionalEncodingExplorer(max_len=64, d_model=64, position=0, pair=0)
    page, errors = _open(browser, w, offline=True)
    canvas = page.locator("[data-testid=pe-table]")
    box = canvas.bounding_box()
    # 点第 40 个位置、第 21 维（属于第 10 对）的中心
    canvas.click(position={"x": (21 + 0.5) / 64 * box["width"], "y": (40 + 0.5) / 64 * box["height"]})
    calls = page.evaluate("window.calls.set")
    assert ["position", 40] in calls and ["pair", 10] in calls
    w.set(position=40, pair=10)
    sin, cos = w.values()
    assert page.locator("[data-testid=pe-sin]").inner_text() == js_fixed(sin, 4)
    assert page.locator("[data-testid=pe-cos]").inner_text() == js_fixed(cos, 4)
    assert page.locator("[data-testid=wavelength]").inner_text() == js_fixed(w.wavelength, 2)
    assert page.locator("[data-testid=dot]").inner_text() == js_fixed(w.dots[40], 3)
    page.locator("[data-testid=position]").focus()
    page.keyboard.press("End")
    assert ["position", 63] in page.evaluate("window.calls.set")
    assert errors == []
    page.close()


def test_heatmap_mask_view_marks_and_explains_blocked_cells(browser):
    from tfcourse.attention import causal_mask
    w = AttentionHeatmap([[1.0, 0, 0], [0.4, 0.6, 0], [0.2, 0.3, 0.5]], list("甲乙丙"), mask=causal_mask(3))
    page, errors = _open(browser, w, offline=True)
    assert page.locator("td.tfc-masked").count() == 3
    assert page.locator('td[data-row="0"][data-col="2"]').inner_text() == "×"
    page.locator('td[data-row="1"][data-col="2"]').click()
    assert "被掩码屏蔽" in page.locator("[data-testid=selection]").inner_text()
    page.locator('td[data-row="1"][data-col="1"]').click()
    assert page.locator("[data-testid=selected-weight]").inner_text() == "0.600"
    assert "被掩码屏蔽" not in page.locator("[data-testid=selection]").inner_text()
    assert errors == []
    page.close()


def test_architecture_map_click_and_keyboard_select_blocks(browser):
    import torch

    from test_site import _CONTRAST_JS
    from tfcourse.anatomy import model_blocks
    from tfcourse.model import TINY, Transformer
    from tfcourse.widgets import ArchitectureMap
    torch.manual_seed(0)
    blocks = model_blocks(Transformer(TINY), torch.randint(1, 16, (2, 9)), torch.randint(1, 16, (2, 5)))
    w = ArchitectureMap(blocks, title="TINY")
    page, errors = _open(browser, w, offline=True)
    page.add_style_tag(content=w.get_state()["_css"])     # 网站上与小部件一起加载的同一份样式表
    assert page.locator("[data-testid=am-total]").inner_text() == f"{w.total_params:,}" == "43,904"
    assert page.locator("button[data-block]").count() == len(blocks)
    assert page.locator(".am-repeat").all_inner_texts() == ["2×", "×2"]        # 论文图：左 N×，右 ×N
    assert page.locator(".am-links polyline").count() == 1                   # memory → 交叉注意力
    # 论文图 1 的摆法：编码器在左、解码器在右，数据自下而上（越往后的方块越靠上）
    box = {b["id"]: page.locator(f'[data-block="{b["id"]}"]').bounding_box() for b in blocks}
    for group in ("encoder", "decoder"):
        ys = [box[b["id"]]["y"] for b in blocks if b["group"] == group]
        assert ys == sorted(ys, reverse=True) and len(set(ys)) == len(ys), group
    assert box["enc.ffn"]["x"] + box["enc.ffn"]["width"] < box["dec.ffn"]["x"]

    page.locator('[data-block="enc.ffn"]').click()
    calls = page.evaluate("window.calls")
    assert calls["set"][-1] == ["selected", "enc.ffn"] and calls["saves"] >= 1
    w.set_state({"selected": calls["set"][-1][1]})              # 活内核里 comm 做的事：Python 端随之更新
    assert w.selected == "enc.ffn"
    ffn = w.selected_block
    detail = page.locator(".am-detail")
    assert detail.locator("[data-testid=am-label]").inner_text() == "前馈网络 FFN"
    assert detail.locator("[data-testid=am-params]").inner_text() == \
        f"每层 {ffn['params']:,} × 2 = {ffn['total_params']:,}" == "每层 4,192 × 2 = 8,384"
    assert detail.locator("[data-testid=am-share]").inner_text() == \
        f"占全部 {js_fixed(ffn['total_params'] / w.total_params * 100, 1)}%" == "占全部 19.1%"
    assert detail.locator("[data-testid=am-shape]").inner_text() == ffn["shape"] == "(B=2, S=9, C=32)"
    assert detail.locator("[data-testid=am-name]").inner_text() == "encoder.layers.0.ffn"
    assert "d_ff = 64" in detail.locator("[data-testid=am-text]").inner_text()
    assert page.locator("button.selected").count() == 1
    assert page.locator('[data-block="enc.ffn"]').get_attribute("aria-pressed") == "true"

    # 键盘：Tab 到方块上按 Enter 选中；↑ 沿数据流走到上面一个方块，焦点跟着走
    page.locator('[data-block="dec.cross_attn"]').focus()
    page.keyboard.press("Enter")
    assert page.evaluate("window.calls.set.at(-1)") == ["selected", "dec.cross_attn"]
    assert detail.locator("[data-testid=am-label]").inner_text() == "交叉注意力 Cross-Attention"
    page.keyboard.press("ArrowUp")
    assert page.evaluate("window.calls.set.at(-1)") == ["selected", "dec.norm2"]
    assert page.evaluate("document.activeElement.dataset.block") == "dec.norm2"
    page.keyboard.press("Tab")                                 # Tab 顺序也是数据流的顺序
    assert page.evaluate("document.activeElement.dataset.block") == "dec.ffn"
    page.locator('[data-block="generator"]').click()
    assert detail.locator("[data-testid=am-params]").inner_text() == "0"
    assert "与目标词嵌入共用权重" in detail.locator("[data-testid=am-text]").inner_text()

    # 配色：每种方块的文字在亮色、暗色页面上都至少 4.5:1（样式表与网站上的相同）
    selectors = [f".am-kind-{k} .am-label" for k in ("embed", "pos", "attn", "norm", "ffn", "linear", "softmax")]
    selectors += [".am-kind-ffn .am-meta", ".am-kind-attn .am-shape", ".am-detail code", ".am-io", ".am-repeat"]
    for bg, fg in (("#ffffff", "#222832"), ("#121212", "#ced6dd")):   # 与网站亮色、暗色主题的正文颜色相近
        page.evaluate(f"document.body.style.cssText = 'background:{bg};color:{fg}'")
        ratios = page.locator(".tfc-archmap").evaluate(_CONTRAST_JS, selectors)
        low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
        assert low == {}, f"背景 {bg} 上对比度不足 4.5:1：{low}"
    assert errors == []
    page.close()
