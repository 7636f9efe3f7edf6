"""基石篇第 2–5 章的网页：在无头 Chromium 里操作每个小部件，显示的数字要和包里算出来的一致。"""
from __future__ import annotations

import math

import pytest

from conftest import chapter_page as _page, js_fixed, row_weights as _row_weights
from tfcourse import attention

SET_RANGE = """(el, v) => { el.value = String(v);
  el.dispatchEvent(new Event('input', { bubbles: true })); }"""


# ---------- 第 3 章：缩放探索器与掩码视图 ----------

@pytest.fixture(scope="module")
def scaling_stats():
    return attention.scaling_statistics()        # 与第 3 章笔记本用的是同一组默认参数


def _scaling_readout(explorer):
    keys = ("var-dot", "max-weight", "entropy", "grad-norm", "q-grad-median", "q-grad-small")
    return {k: explorer.locator(f"[data-testid={k}]").inner_text() for k in keys}


def test_scaling_explorer_shows_what_the_package_computes(visit, scaling_stats):
    v = visit(_page(3), wait_for=".tfc-scaling [data-testid=grad-norm]")
    explorer = v.page.locator(".tfc-scaling").first
    slider, box = explorer.locator("[data-testid=d_index]"), explorer.locator("[data-testid=scaled]")
    d_values = list(scaling_stats["d_values"])
    # 笔记本最后把它停在 d_k = 512、不缩放（第 3 章正文引用的那一格）
    assert explorer.locator("output").inner_text() == "512" and not box.is_checked()
    seen = set()
    for j, scaled in [(9, False), (9, True), (0, False), (6, False), (6, True), (10, False)]:
        slider.evaluate(SET_RANGE, j)
        if box.is_checked() != scaled:
            box.click()
        i = int(scaled)
        st = {k: round(float(scaling_stats[k][i, j] if k != "var_dot" else scaling_stats[k][j]), 6)   # 小部件传的是 6 位小数
              for k in ("var_dot", "max_weight", "entropy", "grad_norm", "q_grad_median", "q_grad_small")}
        expected = {
            "var-dot": js_fixed(st["var_dot"], 1),
            "max-weight": js_fixed(st["max_weight"], 3),
            "entropy": js_fixed(st["entropy"], 3),
            "grad-norm": js_fixed(st["grad_norm"], 3),
            "q-grad-median": js_fixed(st["q_grad_median"], 4),
            "q-grad-small": js_fixed(st["q_grad_small"] * 100, 1) + "%",
        }
        assert explorer.locator("output").inner_text() == str(d_values[j])
        assert _scaling_readout(explorer) == expected, f"d_k={d_values[j]}, scaled={scaled}"
        seen.add(expected["grad-norm"])
    assert len(seen) >= 4
    slider.evaluate(SET_RANGE, 999)                            # 越界：夹回最后一格
    assert explorer.locator("output").inner_text() == str(d_values[-1])
    v.assert_clean()


MASKED_CELLS = {"无掩码": 0, "填充掩码": 10, "因果掩码": 10, "填充+因果": 13}   # 5 个位置的「我 爱 猫 <pad> <pad>」


def test_mask_view_switches_masks_and_blocks_cells(visit):
    sel = '.tfc-heatmap:has(option:text-is("填充+因果"))'
    v = visit(_page(3), wait_for=sel)
    heat = v.page.locator(sel).first
    select = heat.locator("select.tfc-map-select")
    assert select.locator("option").all_inner_texts() == list(MASKED_CELLS)
    for m, (name, n_masked) in enumerate(MASKED_CELLS.items()):
        select.select_option(str(m))
        assert heat.locator("td.tfc-masked").count() == n_masked, name
        heat.locator('td[data-row="0"][data-col="3"]').click()          # 「我」→ 第一个 <pad>
        weight = float(heat.locator("[data-testid=selected-weight]").inner_text())
        blocked = "被掩码屏蔽" in heat.locator("[data-testid=selection]").inner_text()
        assert blocked == (m > 0) and (weight == 0.0) == (m > 0), name
    v.assert_clean()


# ---------- 第 5 章：位置编码探索器 ----------

def test_pe_explorer_table_click_and_sliders(visit):
    v = visit(_page(5), wait_for=".tfc-pe [data-testid=pe-sin]")
    pe = v.page.locator(".tfc-pe").first
    canvas = pe.locator("[data-testid=pe-table]")
    box = canvas.bounding_box()
    d = 64
    for p, col in [(40, 21), (0, 0), (63, 63), (7, 2)]:
        canvas.click(position={"x": (col + 0.5) / d * box["width"], "y": (p + 0.5) / 64 * box["height"]})
        i = col // 2
        omega = 10000 ** (-(2 * i) / d)
        assert pe.locator("[data-testid=pe-sin]").inner_text() == js_fixed(math.sin(p * omega), 4)
        assert pe.locator("[data-testid=pe-cos]").inner_text() == js_fixed(math.cos(p * omega), 4)
        assert pe.locator("[data-testid=wavelength]").inner_text() == js_fixed(2 * math.pi / omega, 2)
        dot = sum(math.cos(p * 10000 ** (-(2 * j) / d)) for j in range(d // 2))   # PE(0)·PE(p)
        assert pe.locator("[data-testid=dot]").inner_text() == js_fixed(dot, 3)
    position = pe.locator("[data-testid=position]")
    position.focus()
    v.page.keyboard.press("End")
    assert pe.locator("output").first.inner_text() == "63"
    position.evaluate(SET_RANGE, -5)
    assert pe.locator("output").first.inner_text() == "0"
    assert pe.locator("[data-testid=dot]").inner_text() == js_fixed(d / 2, 3)
    v.assert_clean()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_new_widgets_are_readable_in_both_themes(visit, scheme):
    from test_site import _CONTRAST_JS

    ratios = {}
    v = visit(_page(3), color_scheme=scheme, wait_for=".tfc-scaling [data-testid=grad-norm]")
    ratios.update({f"缩放 {k}": r for k, r in v.page.locator(".tfc-scaling").first.evaluate(
        _CONTRAST_JS, [".tfc-readout", "label", ".tfc-title", ".tfc-note", "output"]).items()})
    heat = v.page.locator('.tfc-heatmap:has(option:text-is("填充+因果"))').first
    heat.locator("select.tfc-map-select").select_option("3")
    ratios.update({f"掩码 {k}": r for k, r in heat.evaluate(_CONTRAST_JS, ["td.tfc-masked", "td.tfc-cell:not(.tfc-masked)"]).items()})
    v.assert_clean()
    v = visit(_page(5), color_scheme=scheme, wait_for=".tfc-pe [data-testid=pe-sin]")
    ratios.update({f"位置编码 {k}": r for k, r in v.page.locator(".tfc-pe").first.evaluate(
        _CONTRAST_JS, [".tfc-readout", "label", ".tfc-title", ".tfc-note"]).items()})
    low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
    assert low == {}, f"{scheme} 主题下对比度不足 4.5:1 的元素：{low}"
    v.assert_clean()


# ---------- 第 2 章：训练出来的自注意力热力图 ----------

def test_self_attention_heatmap_city_finds_beijing(visit):
    sel = '.tfc-heatmap:has(option:text-is("训练前"))'
    v = visit(_page(2), wait_for=sel)
    heat = v.page.locator(sel).first
    tokens = heat.locator("th.tfc-rowhead").all_inner_texts()
    assert tokens == ["我", "去", "了", "北京", "，", "这座", "城市", "很", "美"]
    r, c = tokens.index("城市"), tokens.index("北京")
    heat.locator(f'td[data-row="{r}"][data-col="{c}"]').click()
    # 笔记本里断言过：训练后「城市」几乎只看「北京」，训练前每格都不到 0.2
    assert float(heat.locator("[data-testid=selected-weight]").inner_text()) > 0.9
    assert "城市" in heat.locator("[data-testid=selection]").inner_text()
    heat.locator("select.tfc-map-select").select_option("1")
    assert float(heat.locator("[data-testid=selected-weight]").inner_text()) < 0.2
    v.assert_clean()


# ---------- 第 4 章：带头选择器的热力图 ----------

def test_head_selector_shows_two_specialised_heads(visit):
    sel = '.tfc-heatmap:has(option:text-is("2 个头 · 第 1 头"))'
    v = visit(_page(4), wait_for=sel)
    heat = v.page.locator(sel).first
    select = heat.locator("select.tfc-map-select")
    assert select.locator("option").all_inner_texts() == ["2 个头 · 第 1 头", "2 个头 · 第 2 头", "1 个头（同样宽度）"]
    argmax = []
    for m in range(3):
        select.select_option(str(m))
        row = _row_weights(heat, 7)                                    # 位置 7 这个查询
        assert abs(sum(row) - 1) < 0.01 and all(w == 0 for w in row[8:])   # 因果掩码：看不到位置 8 以后
        argmax.append(max(range(len(row)), key=row.__getitem__))
    # 笔记本里断言过：一个头看前一个词（位置 6），另一个头看第一个词（位置 0）
    assert sorted(argmax[:2]) == [0, 6]
    first = argmax[:2].index(0)
    select.select_option(str(first))
    heat.locator('td[data-row="7"][data-col="0"]').click()
    assert float(heat.locator("[data-testid=selected-weight]").inner_text()) > 0.8
    v.assert_clean()


