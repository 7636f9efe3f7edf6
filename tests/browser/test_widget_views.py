"""小部件的"看得见"：手机宽度下放得下、点了就在窗口里看到、暗色主题真的暗、打开时的视图就是代码要的那个，
以及第 1 章的注意力游乐场拖动后显示的数字与课程包算的相同。

前半部分在一个只含样式表和小部件的测试页里直接驱动前端模块（不需要构建网站）；
后半部分打开构建好的网站（_build/html）。
"""
from __future__ import annotations

import ast
import base64
import json
import pathlib
import re

import numpy as np
import pytest

from conftest import ROOT, chapter_page, open_page

from tfcourse import attention
from tfcourse.widgets import AttentionHeatmap, AttentionPlayground

PAGE = """<!doctype html><html data-theme="%(theme)s"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0; padding: 12px; background: %(bg)s; color: %(fg)s; } main { max-width: 760px; }</style>
<style>%(css)s</style></head><body><main><p>上文</p><div id="root"></div><p>下文</p></main>
<script type="module">
const state = %(state)s;
const handlers = {};
const model = { get: (k) => state[k],
  set: (k, v) => { state[k] = v; (handlers["change:" + k] || []).forEach((f) => f()); },
  save_changes: () => { throw new Error("没有内核"); },
  on: (n, f) => { for (const x of n.split(" ")) (handlers[x] ||= []).push(f); }, off: () => {} };
const mod = await import("data:text/javascript;base64,%(code)s");
mod.default.render({ model, el: document.getElementById("root") });
window.state = state;
window.ready = true;
</script></body></html>"""
THEMES = {"light": ("#ffffff", "#222832"), "dark": ("#121212", "#ced6dd")}   # 与网站两种主题的正文颜色相近


def _harness(browser, widget, theme="light", width=1280, height=900):
    state = {k: v for k, v in widget.get_state().items() if not k.startswith("_")}
    page = browser.new_page(viewport={"width": width, "height": height})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    bg, fg = THEMES[theme]
    page.set_content(PAGE % {"theme": theme, "bg": bg, "fg": fg, "css": widget.get_state()["_css"],
                             "state": json.dumps(state), "code": base64.b64encode(widget._esm.encode()).decode()})
    page.wait_for_function("window.ready === true")
    page.wait_for_timeout(50)                                  # 等 requestAnimationFrame 里的排版
    return page, errors


def _visible_in_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    vp = page.viewport_size
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and \
        box["x"] + box["width"] <= vp["width"] + 0.5 and box["y"] + box["height"] <= vp["height"] + 0.5


def _visible_in_scroller(cell) -> bool:
    """格子在它所在的横向滚动盒子里露出来了（没被盒子的边裁掉）。"""
    return cell.evaluate("""(td) => { const box = td.closest('.tfc-scroll').getBoundingClientRect();
      const r = td.getBoundingClientRect(); return r.left >= box.left - 0.5 && r.right <= box.right + 0.5; }""")


# ---------- 注意力游乐场：拖动 / 方向键之后，显示的数字 = 课程包算的数字 ----------

LOVE = ([[1.0, 0.0], [0.0, 1.0], [0.8, 0.8]], ["我", "love", "猫"])


def _package_numbers(q, keys, values=None):
    out, weights, scores = attention.simple_attention(query=np.array(q), keys=np.array(keys),
                                                      values=None if values is None else np.array(values))
    return scores, weights, out


def _assert_shows(root, q, keys, values=None):
    scores, weights, out = _package_numbers(q, keys, values)
    shown_q = [float(v) for v in re.findall(r"-?\d+\.\d+", root.locator("[data-testid=ap-query]").inner_text())]
    assert shown_q == pytest.approx(q, abs=1e-9)
    for i in range(len(keys)):
        assert float(root.locator(f"[data-testid=ap-score-{i}]").inner_text()) == pytest.approx(scores[i], abs=5.1e-4)
        assert float(root.locator(f"[data-testid=ap-weight-{i}]").inner_text()) == pytest.approx(weights[i], abs=5.1e-4)
    shown_out = [float(v) for v in re.findall(r"-?\d+\.\d+", root.locator("[data-testid=ap-output]").inner_text())]
    assert shown_out == pytest.approx(list(out), abs=5.1e-4)


def _drag_to(page, root, x, y, limit=1.5):
    """把查询拖到平面上 (x, y) 的位置（按 SVG 的坐标换算成屏幕坐标）。"""
    plane = root.locator("svg.ap-plane")
    box = plane.bounding_box()
    size, pad = 300, 26
    fx = (pad + (x + limit) / (2 * limit) * (size - 2 * pad)) / size
    fy = (size - pad - (y + limit) / (2 * limit) * (size - 2 * pad)) / size
    handle = root.locator("[data-testid=ap-handle]").bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"], steps=6)
    page.mouse.up()


def test_playground_keyboard_and_drag_follow_the_package(browser):
    keys, tokens = LOVE
    w = AttentionPlayground(keys, tokens)
    page, errors = _harness(browser, w)
    root = page.locator(".tfc-ap")
    _assert_shows(root, [0.0, 1.0], keys)                    # 打开时：第 1 章的 0、1、0.8 → 0.168、0.457、0.374
    assert [root.locator(f"[data-testid=ap-weight-{i}]").inner_text() for i in range(3)] == ["0.168", "0.457", "0.374"]
    handle = root.locator("[data-testid=ap-handle]")
    handle.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")                   # 每次 0.05
    page.keyboard.press("Shift+ArrowDown")                  # 一次 5 档 = 0.25
    _assert_shows(root, [0.2, 0.75], keys)
    assert page.evaluate("document.activeElement.dataset.testid") == "ap-handle"   # 重画后焦点还在圆点上
    for _ in range(20):
        page.keyboard.press("Shift+ArrowLeft")              # 越界：夹在 −1.5
    _assert_shows(root, [-1.5, 0.75], keys)
    _drag_to(page, root, 1.0, 1.0)
    q = page.evaluate("window.state.query")
    assert q == pytest.approx([1.0, 1.0], abs=0.051) and all(abs(v * 20 - round(v * 20)) < 1e-9 for v in q)
    _assert_shows(root, q, keys)
    w.set_query(*q)                                         # Python 端同一个查询：数字相同
    np.testing.assert_allclose(w.weights, [float(root.locator(f"[data-testid=ap-weight-{i}]").inner_text())
                                           for i in range(3)], atol=5.1e-4)
    assert errors == []
    page.close()


def test_playground_with_separate_values_and_bad_drag_stays_in_range(browser):
    keys = [[1.0, 0.5], [-0.5, 1.0], [0.0, -1.0]]
    values = [[1.0, 1.0], [-1.0, 0.0], [0.5, -0.5]]
    w = AttentionPlayground(keys, list("甲乙丙"), values, query=(0.5, 0.5), limit=1.0, step=0.1)
    page, errors = _harness(browser, w, width=390)
    root = page.locator(".tfc-ap")
    _assert_shows(root, [0.5, 0.5], keys, values)
    _drag_to(page, root, 3.0, -3.0, limit=1.0)             # 拖出平面：夹在边上
    assert page.evaluate("window.state.query") == [1.0, -1.0]
    _assert_shows(root, [1.0, -1.0], keys, values)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert errors == []
    page.close()


# ---------- 热力图：手机宽度下不撑破页面，选中的格子露在外面 ----------

def _long_heatmap(selected):
    rng = np.random.default_rng(0)
    w = rng.random((6, 14))
    w /= w.sum(axis=1, keepdims=True)
    return AttentionHeatmap(w, [f"写「{c}」" for c in "一万零八十六"], [f"{i}:{d}" for i, d in enumerate("10086123456789")],
                            query_axis="解码器：要写出的字", key_axis="编码器：输入的数字", selected=selected)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_heatmap_fits_a_phone_and_shows_the_selected_cell(browser, theme):
    page, errors = _harness(browser, _long_heatmap((3, 13)), theme=theme, width=390, height=800)
    root = page.locator(".tfc-heatmap")
    assert root.bounding_box()["width"] <= 390 and page.evaluate("document.documentElement.scrollWidth") <= 390
    corner = root.locator("th.tfc-axis-label").bounding_box()["width"]
    rowhead = max(b["width"] for b in (h.bounding_box() for h in root.locator("th.tfc-rowhead").all()))
    assert corner <= rowhead + 1                            # 轴名不撑宽行首那一列
    cell = root.locator('td[data-row="3"][data-col="13"]')
    assert _visible_in_scroller(cell) and _visible_in_viewport(page, cell)   # 打开时就滚到选中的格子
    root.locator('td[data-row="3"][data-col="12"]').click()
    root.locator('td[data-row="3"][data-col="12"]').focus()
    for _ in range(12):
        page.keyboard.press("ArrowLeft")                    # 用方向键走回第 0 列：格子跟着滚进来
    assert _visible_in_scroller(root.locator('td[data-row="3"][data-col="0"]'))
    assert "键「0:1」" in root.locator("[data-testid=selection]").inner_text()
    if theme == "dark":                                     # 暗色主题：最淡的格子也是暗的
        colours = root.locator("td.tfc-cell").evaluate_all(
            "(tds) => tds.map((td) => getComputedStyle(td).backgroundColor.match(/\\d+/g).slice(0, 3).map(Number))")
        assert max(sum(c) / 3 for c in colours) < 200 and min(sum(c) / 3 for c in colours) < 60
    assert errors == []
    page.close()


def test_mask_view_click_on_a_second_same_named_column_changes_the_view(browser):
    w = AttentionHeatmap([[0.5, 0.5, 0.0, 0.0]] * 2, ["我", "猫"], ["我", "猫", "<pad>", "<pad>"],
                         mask=np.array([[True, True, False, False]] * 2))
    page, errors = _harness(browser, w)
    root = page.locator(".tfc-heatmap")
    root.locator('td[data-row="0"][data-col="2"]').click()
    first = (root.locator("[data-testid=selection]").inner_text(), root.locator(".tfc-bars").inner_html(),
             root.locator("thead").inner_html())
    root.locator('td[data-row="0"][data-col="3"]').click()
    second = (root.locator("[data-testid=selection]").inner_text(), root.locator(".tfc-bars").inner_html(),
              root.locator("thead").inner_html())
    assert all(a != b for a, b in zip(first, second))       # 读数、条形图、列头都变了
    assert "第 4 列" in second[0] and "被掩码屏蔽" in second[0]
    assert root.locator(".tfc-bar-row.tfc-picked .tfc-bar-name").inner_text() == "<pad>·4"
    assert errors == []
    page.close()


# ---------- 架构图：1280×900 的窗口里，点最上面的方块，说明就在窗口里 ----------

def _arch_widget():
    import torch

    from tfcourse.anatomy import model_blocks
    from tfcourse.model import TINY, Transformer
    from tfcourse.widgets import ArchitectureMap
    torch.manual_seed(0)
    return ArchitectureMap(model_blocks(Transformer(TINY), torch.randint(1, 16, (2, 9)), torch.randint(1, 16, (2, 5))))


def _click_and_check_detail(page, amap, block_id):
    btn = amap.locator(f'[data-block="{block_id}"]')
    btn.scroll_into_view_if_needed()
    before = amap.locator("[data-testid=am-detail]").inner_text()
    btn.click()
    page.wait_for_timeout(100)
    label = amap.locator("[data-testid=am-label]")
    assert amap.locator("[data-testid=am-detail]").inner_text() != before
    assert _visible_in_viewport(page, label), f"点了 {block_id}，说明却在窗口外：{label.bounding_box()}"
    assert _visible_in_viewport(page, amap.locator("[data-testid=am-params]"))


def test_architecture_map_detail_is_in_the_window_after_any_click(browser):
    page, errors = _harness(browser, _arch_widget(), width=1280, height=900)
    amap = page.locator(".tfc-archmap")
    d, b = amap.locator(".am-diagram").bounding_box(), amap.locator("[data-testid=am-detail]").bounding_box()
    assert b["x"] >= d["x"] + d["width"] - 1                 # 宽屏：说明在图的右边
    for block in ("generator", "src_embed", "dec.softmax" if amap.locator('[data-block="dec.softmax"]').count() else "dec.ffn"):
        _click_and_check_detail(page, amap, block)
    assert errors == []
    page.close()


# ---------- 网站：第 10 章热力图、第 6 章架构图、第 1 章游乐场 ----------

def _open(browser, site_url, path, width=1280, height=900, scheme="light"):
    ctx, v = open_page(browser, site_url, path, color_scheme=scheme, width=width, height=height, wait_for=".tfc-widget")
    page = v.page
    page.wait_for_timeout(200)
    errors = [e for e in v.errors if not e.startswith("Failed to load resource")]
    outside = v.outside
    return ctx, page, outside, errors


def test_site_chapter_ten_heatmaps_fit_a_phone(browser, site_url):
    ctx, page, outside, errors = _open(browser, site_url, chapter_page(10), width=390, height=844)
    heats = page.locator(".tfc-heatmap")
    assert heats.count() >= 2
    for i in range(heats.count()):
        heat = heats.nth(i)
        heat.scroll_into_view_if_needed()
        box = heat.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390 + 0.5, f"第 {i + 1} 张热力图比窗口宽：{box}"
        picked = heat.locator('td[aria-selected="true"], th.tfc-rowhead[aria-selected="true"]').first
        picked.evaluate("(el) => el.scrollIntoView({ block: 'center', inline: 'nearest' })")
        page.wait_for_timeout(50)
        if picked.evaluate("(el) => el.tagName") == "TD":
            assert _visible_in_scroller(picked)
        assert _visible_in_viewport(page, picked), f"第 {i + 1} 张热力图选中的格子不在窗口里"
        # 点最右边一列：表格自己滚过去，格子露在窗口里
        last = heat.locator("td.tfc-cell[data-row='0']").last
        last.click()
        assert _visible_in_scroller(last) and _visible_in_viewport(page, last)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    assert outside == [] and errors == []
    ctx.close()


def test_site_architecture_map_top_block_detail_in_viewport(browser, site_url):
    ctx, page, outside, errors = _open(browser, site_url, chapter_page(6), width=1280, height=900)
    amap = page.locator(".tfc-archmap").first
    top = amap.locator("button[data-block]").evaluate_all(
        "(bs) => bs.map((b) => [b.dataset.block, b.getBoundingClientRect().top]).sort((a, b) => a[1] - b[1])[0][0]")
    _click_and_check_detail(page, amap, top)
    _click_and_check_detail(page, amap, "src_embed")        # 最底下的方块也一样
    assert outside == [] and errors == []
    ctx.close()


def test_site_playground_follows_the_package(browser, site_url):
    ctx, page, outside, errors = _open(browser, site_url, chapter_page(1))
    root = page.locator(".tfc-ap").first
    keys, _ = LOVE
    _assert_shows(root, [0.0, 1.0], keys)
    root.locator("[data-testid=ap-handle]").focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("ArrowDown")
    _assert_shows(root, [0.25, 0.95], keys)
    root.scroll_into_view_if_needed()
    _drag_to(page, root, -1.0, -0.5)
    q = [float(v) for v in re.findall(r"-?\d+\.\d+", root.locator("[data-testid=ap-query]").inner_text())]
    assert q == pytest.approx([-1.0, -0.5], abs=0.051)
    _assert_shows(root, q, keys)
    assert outside == [] and errors == []
    ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_site_widgets_follow_the_theme(browser, site_url, scheme):
    from test_site import _CONTRAST_JS
    ctx, page, outside, errors = _open(browser, site_url, chapter_page(1), scheme=scheme)
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    ap = page.locator(".tfc-ap").first
    ratios = ap.evaluate(_CONTRAST_JS, [".tfc-title", ".tfc-readout", ".ap-table th", "[data-testid=ap-weight-0]", ".ap-sum", ".tfc-note"])
    low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
    assert low == {}, f"{scheme} 主题下对比度不足 4.5:1：{low}"
    heat = page.locator(".tfc-heatmap").first
    shades = heat.locator("td.tfc-cell").evaluate_all(
        "(tds) => tds.map((td) => getComputedStyle(td).backgroundColor.match(/\\d+/g).slice(0, 3).map(Number))")
    lightest = max(sum(c) / 3 for c in shades)
    # 第 1 章"我 love 猫"的权重最小是 0.168（固定的打分算出来的，不随训练变）：亮色主题下它的格子约为
    # (162, 179, 226)，平均 189；暗色主题下没有亮成一片白的格子。
    assert (lightest < 175) if scheme == "dark" else (lightest > 180), shades
    scheme_css = ap.evaluate("(el) => getComputedStyle(el).colorScheme")
    assert ("dark" in scheme_css) == (scheme == "dark")     # 滑块、下拉框等原生控件也跟着变暗
    assert outside == [] and errors == []
    ctx.close()


# ---------- 每一章：小部件打开时的视图 = 笔记本里创建它的代码要的视图 ----------

WIDGET_CLASSES = {"AttentionHeatmap": ".tfc-heatmap:not(.tfc-heatmap-live)", "ReviewAttention": ".tfc-heatmap-live",
                  "SentenceHeads": ".tfc-heatmap-live", "MaskFiller": ".tfc-fill", "PositionalEncodingExplorer": ".tfc-pe",
                  "ArchitectureMap": ".tfc-archmap", "RNNMemoryExplorer": ".tfc-rnn",
                  "ScalingExplorer": ".tfc-scaling", "AttentionPlayground": ".tfc-ap",
                  "BPEMergeExplorer": ".tfc-bpe", "SamplingExplorer": ".tfc-sampling",
                  "KnowledgeMap": ".tfc-kmap", "SampleBoard": ".tfc-board", "RopeExplorer": ".tfc-rope"}
UNKNOWN = object()                                          # 代码里的值不是能静态求出的常量：这一项不比
SAFE = {"len": len, "range": range, "str": str, "int": int, "float": float, "list": list, "tuple": tuple,
        "min": min, "max": max, "sum": sum, "round": round, "enumerate": enumerate, "zip": zip, "np": np}


def _eval(node, env):
    try:
        return eval(compile(ast.Expression(node), "<notebook>", "eval"), {"__builtins__": SAFE}, dict(env))
    except Exception:                                      # noqa: BLE001 —— 依赖运行结果（模型、张量）的值
        return UNKNOWN


def _call_args(call, names, defaults, env):
    """把一次调用的参数按形参名 names（位置参数的顺序）对上，关键字参数只取 names 和 defaults 里有的；
    求不出的记 UNKNOWN。"""
    got = dict(defaults)
    for name, arg in zip(names, call.args):
        got[name] = _eval(arg, env)
    for kw in call.keywords:
        if kw.arg in names or kw.arg in defaults:
            got[kw.arg] = _eval(kw.value, env)
    return got


def intended_views(notebook: pathlib.Path) -> list[tuple[str, dict]]:
    """按笔记本顺序，列出每个被显示的小部件（类名，创建它的单元格想要的初始视图）。

    初始视图 = 构造函数的参数，再叠加同一单元格里、显示之前的 .select / .set / .set_query 调用
    （之后的单元格改了什么不算：那是 Python 端的核对，网页打开时应当是这里的样子）。"""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    env, out = {}, []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        try:
            tree = ast.parse("\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        made = {}                                           # 变量名 → (类名, 视图)
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                    isinstance(stmt.value.func, ast.Name) and stmt.value.func.id in WIDGET_CLASSES and \
                    isinstance(stmt.targets[0], ast.Name):
                cls, call = stmt.value.func.id, stmt.value
                made[stmt.targets[0].id] = (cls, _constructor_view(cls, call, env))
                continue
            call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                    isinstance(call.func.value, ast.Name) and call.func.value.id in made:
                cls, view = made[call.func.value.id]
                _apply_setter(cls, call.func.attr, call, view, env)
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Attribute) and isinstance(stmt.targets[0].value, ast.Name) \
                    and stmt.targets[0].value.id in made and stmt.targets[0].attr == "map_index":
                # heat.map_index = …：打开时显示这一张图（值求不出来就不比）
                made[stmt.targets[0].value.id][1]["map"] = _eval(stmt.value, env)
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) \
                    and stmt.value.func.id == "trace_generation":
                # 采样探索器的初始设置 = 生成时的设置：记下 trace_generation 的关键字参数
                a = _call_args(stmt.value, [], {"temperature": 1.0, "top_k": None, "top_p": None}, env)
                env[stmt.targets[0].id] = {"__trace__": {"temperature": a["temperature"], "top_k": a["top_k"] or 0,
                                                         "top_p": 1.0 if a["top_p"] is None else a["top_p"]}}
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                value = _eval(stmt.value, env)
                env.pop(stmt.targets[0].id, None)
                if value is not UNKNOWN:
                    env[stmt.targets[0].id] = value
            elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.For, ast.With, ast.FunctionDef, ast.Import,
                                   ast.ImportFrom, ast.AnnAssign)):
                for node in ast.walk(stmt):                 # 其他写法改过的名字：不再当常量
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        env.pop(node.id, None)
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Name) and last.value.id in made:
            out.append(made[last.value.id])
    return out


def _constructor_view(cls, call, env) -> dict:
    if cls == "ReviewAttention":                            # 读者的评论：打开在这段文字、第一张图的"（平均）"一行
        return {"text": _call_args(call, ["text"], {}, env)["text"], "row": 0, "col": -1, "map": 0}
    if cls == "MaskFiller":
        return _call_args(call, ["text", "position"], {}, env)
    if cls == "SentenceHeads":                              # 一句话：打开在 map_index 这张图、selected 这一行
        a = _call_args(call, ["text"], {"map_index": 0, "selected": None}, env)
        s = a["selected"]
        row = UNKNOWN if s is UNKNOWN else (1 if s is None else s[0])
        col = UNKNOWN if s is UNKNOWN else (-1 if s is None or len(s) < 2 or s[1] is None else s[1])
        return {"text": a["text"], "map": a["map_index"], "row": row, "col": col}
    if cls == "AttentionHeatmap":
        # 打开时的图：构造函数的 map_index（默认第一张），selected 的第三项（select 的 map_index）优先
        sel = _call_args(call, ["weights", "q_tokens", "k_tokens"], {"selected": None, "map_index": 0}, env)
        view = {"row": -1, "col": -1, "map": sel["map_index"]}
        s = sel["selected"]
        if s is UNKNOWN:                                    # selected 求不出：第三项可能也换了图
            view.update(row=UNKNOWN, col=UNKNOWN, map=UNKNOWN)
        elif s is not None:
            view.update(row=s[0], col=-1 if len(s) < 2 or s[1] is None else s[1])
            if len(s) >= 3 and s[2] is not None:
                view["map"] = s[2]
        return view
    if cls == "PositionalEncodingExplorer":
        a = _call_args(call, ["max_len", "d_model", "position", "pair"], {"position": 10, "pair": 0}, env)
        return {"position": a["position"], "pair": a["pair"]}
    if cls == "ArchitectureMap":
        return {"selected": _call_args(call, ["blocks"], {"selected": ""}, env)["selected"]}
    if cls == "RNNMemoryExplorer":
        return _call_args(call, ["w_hh", "w_xh", "length"], {"w_hh": 0.9, "w_xh": 0.5, "length": 20}, env)
    if cls == "ScalingExplorer":
        return _call_args(call, ["d_k", "scaled"], {"d_k": 64, "scaled": False}, env)
    if cls == "AttentionPlayground":
        return {"query": _call_args(call, ["keys", "tokens", "values"], {"query": (0.0, 1.0)}, env)["query"]}
    if cls == "BPEMergeExplorer":
        return {"step": _call_args(call, ["tokenizer", "sentence"], {"step": 0}, env)["step"]}
    if cls == "SamplingExplorer":
        a = _call_args(call, ["trace", "itos"], {"step": 0}, env)
        g = a["trace"].get("__trace__") if isinstance(a["trace"], dict) else None
        view = {"step": a["step"], "temperature": UNKNOWN, "top_k": UNKNOWN, "top_p": UNKNOWN}
        if g is not None:
            view.update(g)
        return view
    if cls == "KnowledgeMap":
        a = _call_args(call, ["data"], {"selected": None, "module": ""}, env)
        return {"selected": a["selected"] if a["selected"] is not None else UNKNOWN, "module": a["module"]}
    if cls == "RopeExplorer":
        a = _call_args(call, ["model", "vocab", "query_char", "key_char"], {"query_pos": 20, "key_pos": 17}, env)
        return {"query_pos": a["query_pos"], "key_pos": a["key_pos"]}
    if cls == "SampleBoard":
        # 不给 index 时打开在第一条每格都干净的样本上（由样本决定，静态求不出；笔记本的核对单元检查它）
        index = _call_args(call, ["samples", "probs"], {"index": None}, env)["index"]
        return {"index": UNKNOWN if index is None else index}
    raise AssertionError(cls)


def _apply_setter(cls, method, call, view, env):
    if cls == "AttentionHeatmap" and method == "select":
        a = _call_args(call, ["row", "col", "map_index"], {"col": None, "map_index": None}, env)
        if a["map_index"] is not None:
            view["map"] = a["map_index"]
        view["row"] = a["row"]
        view["col"] = -1 if a["col"] is None else a["col"]
    elif cls == "PositionalEncodingExplorer" and method == "set":
        view.update({k: v for k, v in _call_args(call, ["position", "pair"], {}, env).items() if v is not None})
    elif cls == "ArchitectureMap" and method == "select":
        view["selected"] = _call_args(call, ["selected"], {}, env)["selected"] or ""
    elif cls in ("RNNMemoryExplorer", "ScalingExplorer") and method == "set":
        names = ["w_hh", "w_xh", "length"] if cls == "RNNMemoryExplorer" else ["d_k", "scaled"]
        view.update({k: v for k, v in _call_args(call, names, {}, env).items() if v is not None})
    elif cls == "BPEMergeExplorer" and method == "set":
        view["step"] = _call_args(call, ["step"], {}, env)["step"]
    elif cls == "SamplingExplorer" and method == "set":
        view.update({k: v for k, v in _call_args(call, ["step", "temperature", "top_k", "top_p"], {}, env).items()
                     if v is not None})
    elif cls == "KnowledgeMap" and method == "select":
        view["selected"] = _call_args(call, ["number"], {}, env)["number"]
    elif cls == "KnowledgeMap" and method == "highlight":
        view["module"] = _call_args(call, ["module"], {"module": ""}, env)["module"]
    elif cls == "SampleBoard" and method == "set":
        view["index"] = _call_args(call, ["index"], {}, env)["index"]
    elif cls == "AttentionPlayground" and method == "set_query":
        a = _call_args(call, ["x", "y"], {}, env)
        view["query"] = (a["x"], a["y"])


def shown_view(cls, root) -> dict:
    """网页上这个小部件此刻显示的视图。"""
    if cls in ("ReviewAttention", "SentenceHeads"):          # 热力图，加上它上面那个文本框里的文字
        return dict(shown_view("AttentionHeatmap", root),
                    text=root.locator("xpath=preceding-sibling::div[contains(@class, 'tfc-live')][1]//textarea").input_value())
    if cls == "MaskFiller":
        pressed = [b.get_attribute("aria-pressed") for b in root.locator("button.tfc-fill-char").all()]
        return {"text": root.locator("textarea").input_value(), "position": pressed.index("true") if "true" in pressed else -1}
    if cls == "AttentionHeatmap":
        sel = root.locator("select.tfc-map-select")
        view = {"map": int(sel.input_value()) if sel.count() else 0, "row": -1, "col": -1}
        cell = root.locator('td.tfc-cell[aria-selected="true"]')
        head = root.locator('th.tfc-rowhead[aria-selected="true"]')
        if cell.count():
            view.update(row=int(cell.get_attribute("data-row")), col=int(cell.get_attribute("data-col")))
        elif head.count():
            view.update(row=int(head.get_attribute("data-row")))
        return view
    if cls == "PositionalEncodingExplorer":
        return {"position": int(root.locator("[data-testid=position]").input_value()),
                "pair": int(root.locator("[data-testid=pair]").input_value())}
    if cls == "ArchitectureMap":
        picked = root.locator("button.selected")
        return {"selected": picked.get_attribute("data-block") if picked.count() else ""}
    if cls == "RNNMemoryExplorer":
        outs = root.locator("output").all_inner_texts()
        return {"w_hh": float(outs[0]), "w_xh": float(outs[1]), "length": int(outs[2])}
    if cls == "ScalingExplorer":
        return {"d_k": int(root.locator("output").first.inner_text()),
                "scaled": root.locator("[data-testid=scaled]").is_checked()}
    if cls == "AttentionPlayground":
        q = [float(v) for v in re.findall(r"-?\d+\.\d+", root.locator("[data-testid=ap-query]").inner_text())]
        return {"query": tuple(q)}
    if cls == "BPEMergeExplorer":
        return {"step": int(root.locator("[data-testid=step]").input_value())}
    if cls == "SamplingExplorer":
        outs = root.locator(".tfc-control output").all_inner_texts()     # 第几步、温度、top-k、top-p
        return {"step": int(root.locator("[data-testid=step]").input_value()), "temperature": float(outs[1]),
                "top_k": 0 if outs[2] == "不用" else int(outs[2]), "top_p": 1.0 if outs[3] == "不用" else float(outs[3])}
    if cls == "KnowledgeMap":
        picked = root.locator("button.km-ch.selected")
        mod = root.locator('button.km-mod[aria-pressed="true"]')
        return {"selected": int(picked.get_attribute("data-chapter")) if picked.count() else 0,
                "module": mod.first.get_attribute("data-module") if mod.count() else ""}
    if cls == "SampleBoard":
        return {"index": int(root.locator("[data-testid=index]").input_value())}
    if cls == "RopeExplorer":
        return {"query_pos": int(root.locator("[data-testid=query_pos]").input_value()),
                "key_pos": int(root.locator("[data-testid=key_pos]").input_value())}
    raise AssertionError(cls)


def _same(cls, key, want, got) -> bool:
    if want is UNKNOWN:
        return True
    if key == "query":
        return len(got) == 2 and all(abs(float(w) - g) < 5e-3 for w, g in zip(want, got))
    if cls == "RNNMemoryExplorer" and key in ("w_hh", "w_xh"):
        return abs(float(want) - got) < 0.026                # 滑块取最近的网格值（0.05 一档）
    if cls == "SamplingExplorer" and key in ("temperature", "top_p"):
        return abs(float(want) - got) < 1e-6
    if cls == "ScalingExplorer" and key == "d_k":
        return int(want) == got
    return want == got


def test_intended_views_reads_constructor_and_same_cell_setters(tmp_path):
    nb = {"cells": [
        {"cell_type": "code", "source": "STEPS = [0, 5, 10]\nname = 'enc.ffn'\n"},
        {"cell_type": "code", "source": "heat = AttentionHeatmap(w, toks, selected=(1, 2))\n"
                                        "heat.select(0, 0, map_index=len(STEPS) - 1)\nheat\n"},
        {"cell_type": "code", "source": "heat.select(5, 5)\n"},                     # 之后的单元格：不算
        {"cell_type": "code", "source": "pe = PositionalEncodingExplorer(max_len=64, d_model=64, position=3)\npe\n"},
        {"cell_type": "code", "source": "arch = ArchitectureMap(blocks, selected=model.best)\narch\n"},
        {"cell_type": "code", "source": "arch2 = ArchitectureMap(blocks, title='x', selected=name)\n"},   # 没有显示
    ]}
    path = tmp_path / "t.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    views = intended_views(path)
    assert views[0] == ("AttentionHeatmap", {"row": 0, "col": 0, "map": 2})
    assert views[1] == ("PositionalEncodingExplorer", {"position": 3, "pair": 0})
    assert views[2][0] == "ArchitectureMap" and views[2][1]["selected"] is UNKNOWN
    assert len(views) == 3


def test_intended_views_reads_the_sampling_explorer_generation_settings(tmp_path):
    nb = {"cells": [
        {"cell_type": "code", "source": "trace = trace_generation(model, prompt, 30, temperature=1.2, top_k=5,\n"
                                        "                         seed=1)\nex = SamplingExplorer(trace, itos)\nex\n"},
        {"cell_type": "code", "source": "ex2 = SamplingExplorer(other, itos, step=4)\nex2.set(top_p=0.8)\nex2\n"},
    ]}
    path = tmp_path / "t.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    views = intended_views(path)
    assert views[0] == ("SamplingExplorer", {"step": 0, "temperature": 1.2, "top_k": 5, "top_p": 1.0})
    assert views[1][1]["step"] == 4 and views[1][1]["top_p"] == 0.8 and views[1][1]["temperature"] is UNKNOWN
    # 第 13 章：生成用 温度 1.0、top-p 0.9，打开时就显示这组设置
    ch13 = ROOT / "book" / "p3-pretraining" / "ch13-gpt.ipynb"
    assert ("SamplingExplorer", {"step": 0, "temperature": 1.0, "top_k": 0, "top_p": 0.9}) in intended_views(ch13)


def test_sampling_explorer_shown_view_is_the_intended_view(browser):
    from tfcourse.widgets import SamplingExplorer
    trace, _ = _sampling_trace()
    w = SamplingExplorer(trace, [f"t{i}" for i in range(60)], step=2)
    page, errors = _harness(browser, w)
    got = shown_view("SamplingExplorer", page.locator(WIDGET_CLASSES["SamplingExplorer"]))
    want = {"step": 2, "temperature": 1.0, "top_k": 0, "top_p": 0.9}
    assert all(_same("SamplingExplorer", k, v, got[k]) for k, v in want.items()), got
    w.set(temperature=0.5, top_k=20, top_p=1.0)             # 换一组设置再打开：读出来的也跟着变
    page.close()
    page, errors2 = _harness(browser, w)
    got = shown_view("SamplingExplorer", page.locator(WIDGET_CLASSES["SamplingExplorer"]))
    assert got == {"step": 2, "temperature": 0.5, "top_k": 20, "top_p": 1.0}
    assert errors == errors2 == []
    page.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_widget_text_contrast_in_both_themes_without_the_site(browser, theme):
    from test_site import _CONTRAST_JS
    from tfcourse.widgets import PositionalEncodingExplorer
    cases = [
        (AttentionPlayground(*LOVE, title="游乐场"), [".tfc-title", ".tfc-readout", ".ap-table th", ".ap-table td",
                                                    "[data-testid=ap-weight-1]", ".ap-sum", ".ap-terms", ".tfc-note"]),
        (_long_heatmap((2, 3)), [".tfc-axes", "th.tfc-axis-label span", "th.tfc-rowhead", ".tfc-note", ".tfc-bar-value"]),
        (AttentionHeatmap([[0.9, 0.1], [0.5, 0.5]], ["甲", "乙"], selected=(0, 1)),
         ['td[data-row="0"][data-col="0"]', 'td[data-row="0"][data-col="1"]', 'td[data-row="1"][data-col="0"]']),
        (PositionalEncodingExplorer(max_len=64, d_model=64), [".tfc-readout", "label", ".tfc-title", ".tfc-note", "output"]),
    ]
    low = {}
    for widget, selectors in cases:
        page, errors = _harness(browser, widget, theme=theme)
        ratios = page.locator(".tfc-widget").first.evaluate(_CONTRAST_JS, selectors)
        low.update({f"{type(widget).__name__} {k}": round(r, 2) for k, r in ratios.items() if r is None or r < 4.5})
        scheme_css = page.locator(".tfc-widget").first.evaluate("(el) => getComputedStyle(el).colorScheme")
        assert ("dark" in scheme_css) == (theme == "dark")      # 暗色主题下原生控件（滑块、下拉框）也是暗的
        assert errors == []
        page.close()
    assert low == {}, f"{theme} 主题下对比度不足 4.5:1：{low}"


def test_pe_table_colours_mean_what_the_static_figure_means(browser):
    """第 5 章静态图用 matplotlib 的 RdBu_r（vmin = −1，vmax = 1）：+1 红，0 白，−1 蓝；编码表画布要同样的意思。"""
    import math

    from tfcourse.widgets import PositionalEncodingExplorer
    w = PositionalEncodingExplorer(max_len=64, d_model=64, position=40, pair=20)
    page, errors = _harness(browser, w)
    pixel = lambda x, y: page.locator("[data-testid=pe-table]").evaluate(   # noqa: E731
        f"(c) => Array.from(c.getContext('2d').getImageData({x}, {y}, 1, 1).data.slice(0, 3))")
    plus, zero, minus = pixel(1, 0), pixel(0, 0), pixel(1, 3)   # PE[0,1] = cos 0 = +1；PE[0,0] = sin 0 = 0；PE[3,1] = cos 3 ≈ −0.99
    assert math.cos(3) < -0.98
    assert plus[0] > plus[2] + 40, plus                     # 红
    assert minus[2] > minus[0] + 40, minus                  # 蓝
    assert min(zero) > 235, zero                            # 白
    assert "红 = +1" in page.locator("[data-testid=pe-legend]").inner_text()
    assert page.locator(".tfc-pe svg").first.locator("text.tfc-xtick").count() >= 3   # 两张图都有 x 轴刻度
    assert page.locator(".tfc-pe svg").nth(1).locator("text.tfc-xtick").count() >= 3
    assert errors == []
    page.close()


# ---------- BPE 合并探索器（第 11 章）：按钮跳到改变句子的合并，显示的切分 = 课程包的编码 ----------

@pytest.mark.parametrize("theme", ["light", "dark"])
def test_bpe_explorer_steps_follow_the_package(browser, theme):
    from test_site import _CONTRAST_JS
    from tfcourse.tokenize import BPETokenizer
    from tfcourse.widgets import BPEMergeExplorer
    tok = BPETokenizer.train(["这本书很好，很好看。", "这本书不好看，不好。", "书很好，好看！"] * 4, 320)
    sentence = "这本书很好看，hello！"
    w = BPEMergeExplorer(tok, sentence)
    page, errors = _harness(browser, w, theme=theme, width=390)
    root = page.locator(".tfc-bpe")

    def shown():
        return root.locator(".tfc-bpe-tok").all_inner_texts()

    assert shown() == w.tokens(0) and root.locator("[data-testid=bpe-count]").inner_text() == str(len(w.tokens(0)))
    root.locator("[data-testid=bpe-next]").click()            # 跳到第一次改变这句话的合并
    step = page.evaluate("window.state.step")
    assert step == w.change_steps[1] and shown() == w.tokens(step)
    assert root.locator(".tfc-bpe-new").count() >= 1           # 刚生成的 token 高亮
    root.locator("[data-testid=step]").fill(str(w.n_steps))
    assert shown() == w.tokens(w.n_steps)
    root.locator("[data-testid=bpe-prev]").click()
    assert page.evaluate("window.state.step") == max(c for c in w.change_steps if c < w.n_steps)
    assert _visible_in_viewport(page, root.locator("[data-testid=bpe-tokens]"))   # 手机宽度放得下
    ratios = root.evaluate(_CONTRAST_JS, [".tfc-title", ".tfc-readout", ".tfc-bpe-tok", ".tfc-note", "button"])
    assert {k: r for k, r in ratios.items() if r is None or r < 4.5} == {}
    assert errors == []
    page.close()


# ---------- 采样探索器（第 13 章）：拖动温度、top-k、top-p 之后，留下的候选和概率 = tfcourse.sampling 算的 ----------

def _sampling_trace():
    import torch

    from tfcourse.gpt import GPT, GPTConfig
    from tfcourse.widgets.sampling_explorer import trace_generation
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=60, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=16)).eval()
    prompt = torch.tensor([[0, 5, 7]])
    trace = trace_generation(model, prompt, 8, temperature=1.0, top_p=0.9, seed=1)
    with torch.no_grad():
        logits = model(torch.tensor([trace["ids"][:-1]]))[0, 2:]            # (8, V)：每一步的打分
    return trace, logits


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_sampling_explorer_controls_follow_the_package(browser, theme):
    import torch

    from test_site import _CONTRAST_JS
    from tfcourse import sampling
    from tfcourse.widgets import SamplingExplorer
    trace, logits = _sampling_trace()
    w = SamplingExplorer(trace, [f"t{i}" for i in range(60)])
    page, errors = _harness(browser, w, theme=theme, width=390)
    root = page.locator(".tfc-sampling")
    n_top = len(trace["cand_ids"][0])

    def check(step, temperature, top_k, top_p):
        z = sampling.apply_sampling_rules(logits[step], temperature, top_k=top_k or None,
                                          top_p=None if top_p == 1.0 else top_p)
        keep = torch.isfinite(z)
        p_all = (logits[step] / temperature).softmax(dim=-1)
        p_kept = z.softmax(dim=-1)
        assert int(root.locator("[data-testid=n-kept]").inner_text()) == int(keep.sum())
        assert float(root.locator("[data-testid=kept-mass]").inner_text()) == \
            pytest.approx(float(p_all[keep].sum()), abs=6e-4)
        for r, tok in enumerate(trace["cand_ids"][step][:n_top]):
            row = root.locator(f"[data-testid=cand-{r}]")
            assert ("tfc-off" not in row.get_attribute("class")) == bool(keep[tok]), (r, tok)
            nums = [float(v) for v in re.findall(r"\d+\.\d+", row.locator(".tfc-cand-value").inner_text())]
            assert nums[0] == pytest.approx(float(p_all[tok]), abs=6e-4)
            if keep[tok]:                                   # 括号里：重新归一化后真正抽样用的概率
                assert nums[1] == pytest.approx(float(p_kept[tok]), abs=2e-3)
            else:
                assert len(nums) == 1
        shown = "".join(root.locator("[data-testid=prefix] .tfc-tok").all_inner_texts())
        assert shown == "".join(f"t{i}" for i in trace["ids"][:trace["n_prompt"] + step + 1])

    def move(key, index):
        root.locator(f"[data-testid={key}]").fill(str(index))
        assert page.evaluate(f"window.state.{key}") == index

    # 打开时：第 1 步，生成时的设置（温度 1.0、不用 top-k、top-p = 0.9）
    assert root.locator("[data-testid=step]").input_value() == "0"
    check(0, 1.0, 0, 0.9)
    move("step", 3)
    move("t_index", trace["temperatures"].index(0.5))
    check(3, 0.5, 0, 0.9)
    move("k_index", trace["top_ks"].index(5))
    move("p_index", trace["top_ps"].index(1.0))
    check(3, 0.5, 5, 1.0)                                   # 只用 top-k：正好 5 个
    assert int(root.locator("[data-testid=n-kept]").inner_text()) == 5
    move("t_index", trace["temperatures"].index(1.5))
    move("p_index", trace["top_ps"].index(0.7))
    check(3, 1.5, 5, 0.7)                                   # 两条都用
    move("k_index", trace["top_ks"].index(0))
    move("step", 7)
    check(7, 1.5, 0, 0.7)                                   # 只用 top-p
    # 手机宽度放得下：不出现横向滚动条，候选列表在窗口宽度之内
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = root.locator(".tfc-cands").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390.5
    ratios = root.evaluate(_CONTRAST_JS, [".tfc-title", ".tfc-readout", ".tfc-note", ".tfc-cand-name",
                                          ".tfc-cand-value", "label", "output"])
    assert {k: r for k, r in ratios.items() if r is None or r < 4.5} == {}
    assert errors == []
    page.close()


# ---------- 知识地图：点章看详情、点模块看哪些章用到它；手机宽度放得下，两种主题都可读 ----------

@pytest.mark.parametrize("theme", ["light", "dark"])
def test_knowledge_map_clicks_follow_the_repository_data(browser, theme):
    from test_site import _CONTRAST_JS
    from tfcourse.widgets import KnowledgeMap
    from tfcourse.widgets.knowledge_map import build_knowledge_map
    atlas = build_knowledge_map(ROOT)
    w = KnowledgeMap(atlas, selected=3)
    page, errors = _harness(browser, w, theme=theme, width=390)
    root = page.locator(".tfc-kmap")
    assert shown_view("KnowledgeMap", root) == {"selected": 3, "module": ""}
    # 最后一个用到 tfcourse.attention 的章（附录 B 不用它）：点它，再点这个模块
    last = [c for c in atlas["chapters"] if any(m["name"] == "tfcourse.attention" for m in c["modules"])][-1]
    root.locator(f'button.km-ch[data-chapter="{last["number"]}"]').click()
    assert page.evaluate("window.state.selected") == last["number"]
    link = root.locator("[data-testid=km-link]")
    assert link.get_attribute("href") == last["url"] and last["label"] in link.inner_text()
    assert root.locator("[data-testid=km-sections] li").all_inner_texts() == last["sections"]
    chips = root.locator("[data-testid=km-mods] button.km-mod")
    assert chips.count() >= len(last["modules"])
    # 点模块：用到它的章亮起来，和 Python 端 chapters_using 一致
    root.locator('[data-testid=km-mods] button.km-mod[data-module="tfcourse.attention"]').click()
    assert page.evaluate("window.state.module") == "tfcourse.attention"
    lit = sorted(int(x) for x in root.locator("button.km-ch.km-lit").evaluate_all(
        "(bs) => bs.map((b) => b.dataset.chapter)"))
    assert lit == w.chapters_using("tfcourse.attention") and lit
    shown = root.locator("[data-testid=km-users]").inner_text()
    labels = {c["number"]: c["label"] for c in w.chapters}
    assert shown == "、".join(str(n) if n <= 16 else labels[n] for n in lit)   # 附录显示成「附录 A」
    dim = root.evaluate(_CONTRAST_JS, [".km-dim .km-name", ".km-dim .km-num", ".km-lit .km-name"])
    assert {k: r for k, r in dim.items() if r is None or r < 4.5} == {}      # 变淡的章也要读得清
    root.locator("[data-testid=km-clear]").click()
    assert page.evaluate("window.state.module") == "" and root.locator("button.km-ch.km-lit").count() == 0
    # 手机宽度：不出现横向滚动条；详情在窗口宽度之内
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = root.locator("[data-testid=km-detail]").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390.5
    ratios = root.evaluate(_CONTRAST_JS, [".tfc-title", ".km-caption", ".km-num", ".km-name", ".km-label",
                                          ".km-sections li", ".km-mod", ".km-names", ".tfc-readout"])
    assert {k: r for k, r in ratios.items() if r is None or r < 4.5} == {}
    assert errors == []
    page.close()


# ---------- 样本看板（第 15 章）：拖动"第几条"之后，每格的文本、判决和成功率 = Python 算好的 ----------

def _sample_board(index=0):
    from tfcourse.widgets import SampleBoard
    rng = np.random.default_rng(0)
    models, n = ["基座", "LoRA r=4", "全量微调"], 6
    texts = [[[f"{m}·{c}·第{i}条" + "很长的评论" * (i % 3) for i in range(n)] for c in ("好", "差")] for m in models]
    probs = rng.uniform(0, 1, size=(2, len(models), 2, n))
    probs[0, 0, 0, 0], probs[1, 0, 0, 0] = 0.9, 0.2                 # 第 0 条、第一格：两位评委意见不同
    return SampleBoard(texts, probs, models=models, judges=["评委 A", "评委 B"], index=index), texts, probs


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_sample_board_shows_the_precomputed_samples_and_verdicts(browser, theme):
    from test_site import _CONTRAST_JS
    w, texts, probs = _sample_board()
    page, errors = _harness(browser, w, theme=theme, width=390)
    root = page.locator(".tfc-board")

    def check(i):
        for m in range(3):
            for c, wanted in enumerate((1, 0)):
                cell = root.locator(f"[data-testid=cell-{m}-{c}]")
                assert cell.locator("[data-testid=text]").inner_text() == texts[m][c][i]
                for j in range(2):
                    verdict = cell.locator(f"[data-testid=verdict-{j}]").inner_text()
                    hit = (probs[j, m, c, i] >= 0.5) == wanted
                    assert verdict.startswith("✓" if hit else "✗"), verdict
                    assert f"{w.probs[m][c][i][j]:.2f}" in verdict              # 显示的是 Python 取整后的概率
                rate = cell.locator("[data-testid=rate]").inner_text()
                for j in range(2):
                    want = ((probs[j, m, c] >= 0.5) == wanted).mean()
                    assert f"{100 * want:.0f}%" in rate

    assert shown_view("SampleBoard", root) == {"index": 0}
    check(0)
    assert "✓" in root.locator("[data-testid=cell-0-0] [data-testid=verdict-0]").inner_text()
    assert "✗" in root.locator("[data-testid=cell-0-0] [data-testid=verdict-1]").inner_text()
    root.locator("[data-testid=index]").fill("4")
    assert page.evaluate("window.state.index") == 4
    check(4)
    root.locator("[data-testid=index]").fill("99")                 # 滑块本身夹在范围之内
    assert page.evaluate("window.state.index") == 5
    # 手机宽度放得下：没有横向滚动条，每格在窗口之内
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = root.locator("[data-testid=cell-2-1]").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390.5
    ratios = root.evaluate(_CONTRAST_JS, [".tfc-title", ".tfc-board-text", ".tfc-board-verdict.tfc-hit",
                                          ".tfc-board-verdict.tfc-miss", ".tfc-board-model", "label", "output"])
    assert {k: r for k, r in ratios.items() if r is None or r < 4.5} == {}
    assert errors == []
    page.close()


def test_knowledge_map_clamps_a_bad_chapter_in_the_browser(browser):
    from tfcourse.widgets import KnowledgeMap
    from tfcourse.widgets.knowledge_map import build_knowledge_map
    w = KnowledgeMap(build_knowledge_map(ROOT))
    page, errors = _harness(browser, w, width=1280)
    root = page.locator(".tfc-kmap")
    page.evaluate("window.state.selected = 999")          # 越界的章号（例如旧的保存状态）
    root.locator("button.km-mod").first.click()           # 任何一次操作都会重画
    assert shown_view("KnowledgeMap", root)["selected"] == w.numbers[-1]   # 夹到最近的一章
    page.screenshot(path="/tmp/ch16/kmap-1280.png", full_page=True)
    assert errors == []
    page.close()


def test_intended_views_reads_the_knowledge_map(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "kmap = KnowledgeMap(atlas, selected=16)\nkmap\n"},
                    {"cell_type": "code", "source": "k2 = KnowledgeMap(atlas)\nk2.highlight('tfcourse.gpt')\nk2\n"}]}
    path = tmp_path / "t.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    views = intended_views(path)
    assert views[0] == ("KnowledgeMap", {"selected": 16, "module": ""})
    assert views[1][1]["module"] == "tfcourse.gpt" and views[1][1]["selected"] is UNKNOWN
    # 第 16 章：地图打开时选中第 16 章
    ch16 = ROOT / "book" / "p4-practice" / "ch16-optimization-evaluation-roadmap.ipynb"
    assert ("KnowledgeMap", {"selected": 16, "module": ""}) in intended_views(ch16)
def test_sample_board_shown_view_is_the_intended_view(browser):
    w, _, _ = _sample_board(index=3)
    page, errors = _harness(browser, w, width=1280)
    assert shown_view("SampleBoard", page.locator(".tfc-board")) == {"index": 3}
    # 宽屏：每行的两格并排
    a = page.locator("[data-testid=cell-1-0]").bounding_box()
    b = page.locator("[data-testid=cell-1-1]").bounding_box()
    assert abs(a["y"] - b["y"]) < 1 and b["x"] > a["x"] + a["width"] - 1
    assert errors == []
    page.close()
