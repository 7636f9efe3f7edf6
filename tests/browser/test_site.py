"""打开构建好的网站，像读者一样使用小部件；断言离线可用、数值正确、主题可读。"""
from __future__ import annotations

import functools
import pathlib
import re

import pytest
from conftest import COLOUR_JS, site_pages
import yaml
from bs4 import BeautifulSoup

from tfcourse import attention, rnn
from tfcourse.widgets import format_state

ROOT = pathlib.Path(__file__).resolve().parents[2]
CH1 = "book/p1-foundations/ch01-why-rnn-forgets.html"
EXPLORER = ".tfc-rnn"
HEATMAP_LOVE = '.tfc-heatmap:has(th:text-is("love"))'

SET_RANGE = """(el, v) => { el.value = String(v);
  el.dispatchEvent(new Event('input', { bubbles: true })); }"""


def test_chapter_one_renders_both_widgets_offline(visit):
    v = visit(CH1, wait_for=f"{EXPLORER} [data-testid=rnn-value]")
    page = v.page
    assert page.locator(EXPLORER).count() >= 1
    page.wait_for_selector(HEATMAP_LOVE, timeout=20_000)
    assert page.locator(f"{HEATMAP_LOVE} td.tfc-cell").count() == 9
    explorer = page.locator(EXPLORER).first
    assert explorer.locator("[data-testid=rnn-value]").inner_text() == format_state(rnn.final_hidden_state(20))
    assert explorer.locator("[data-testid=rnn-value]").inner_text() == "0.0493"
    # 页面用的是本站自带的渲染器（widgets-static.js），不是 4 MB 的 html-manager
    assert page.evaluate("document.documentElement.dataset.tfcWidgets") == "ready"
    assert page.evaluate("typeof window.requirejs") == "undefined"
    v.assert_clean()


def _explorer_settings(explorer):
    outs = explorer.locator("output").all_inner_texts()
    return float(outs[0]), float(outs[1]), int(outs[2])


def test_moving_sliders_shows_what_tfcourse_rnn_computes(visit):
    v = visit(CH1, wait_for=f"{EXPLORER} [data-testid=rnn-value]")
    explorer = v.page.locator(EXPLORER).first
    w_hh, w_xh, length = (explorer.locator(f"[data-testid={k}]") for k in ("w_hh_index", "w_xh_index", "length"))
    shown = explorer.locator("[data-testid=rnn-value]")

    seen = set()
    for i_hh, i_xh, L in [(18, 1, 5), (18, 1, 50), (10, 3, 12), (24, 7, 100), (30, 0, 3), (19, 1, 77)]:
        w_hh.evaluate(SET_RANGE, i_hh)
        w_xh.evaluate(SET_RANGE, i_xh)
        length.evaluate(SET_RANGE, L)
        a, b, n = _explorer_settings(explorer)
        assert n == L
        expected = format_state(rnn.final_hidden_state(n, a, b))
        assert shown.inner_text() == expected, f"W_hh={a}, W_xh={b}, L={n}"
        seen.add(expected)
    assert len(seen) == 6, "不同的设置应显示不同的数值"

    # 键盘：Home/End 到两端，方向键一步一格；越界的值被夹回范围
    length.focus()
    v.page.keyboard.press("End")
    assert _explorer_settings(explorer)[2] == 100
    v.page.keyboard.press("ArrowRight")
    assert _explorer_settings(explorer)[2] == 100
    length.evaluate(SET_RANGE, 5000)
    assert _explorer_settings(explorer)[2] == 100
    w_hh.focus()
    v.page.keyboard.press("Home")
    a, b, n = _explorer_settings(explorer)
    assert a == 0.0 and shown.inner_text() == format_state(rnn.final_hidden_state(n, a, b)) == "0"
    v.assert_clean()


def test_clicking_a_heatmap_cell_shows_that_weight(visit):
    v = visit(CH1, wait_for=HEATMAP_LOVE)
    heat = v.page.locator(HEATMAP_LOVE).first
    _, love_row, _ = attention.simple_attention([0.0, 1.0], [[1.0, 0.0], [0.0, 1.0], [0.8, 0.8]])
    tokens = heat.locator("th.tfc-rowhead").all_inner_texts()
    r = tokens.index("love")

    cell = heat.locator(f'td[data-row="{r}"][data-col="2"]')
    cell.hover()
    assert f"{love_row[2]:.3f}" in heat.locator("[data-testid=hover]").inner_text()
    cell.click()
    assert heat.locator("[data-testid=selected-weight]").inner_text() == f"{love_row[2]:.3f}" == "0.374"
    assert "love" in heat.locator("[data-testid=selection]").inner_text()
    assert heat.locator('td[aria-selected="true"]').count() == 1
    bars = heat.locator(".tfc-bar-value").all_inner_texts()
    assert bars == [f"{w:.3f}" for w in love_row]

    # 键盘：焦点留在选中的格子上，方向键移动选择
    v.page.keyboard.press("ArrowLeft")
    assert heat.locator("[data-testid=selected-weight]").inner_text() == f"{love_row[1]:.3f}" == "0.457"
    v.page.keyboard.press("ArrowLeft")
    v.page.keyboard.press("ArrowLeft")                       # 越过第一列 -> 选中整行
    assert heat.locator("[data-testid=selected-weight]").count() == 0
    assert "这一行" in heat.locator("[data-testid=selection]").inner_text()
    v.assert_clean()


_CONTRAST_JS = "(root, selectors) => {\n" + COLOUR_JS + """  const out = {};
  for (const sel of selectors) { const el = root.querySelector(sel); if (!el) { out[sel] = null; continue; }
    const bg = background(el); const fg = over(parse(getComputedStyle(el).color), bg);
    const [a, b] = [lum(fg), lum(bg)]; out[sel] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); }
  return out; }"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_widgets_are_readable_in_light_and_dark_themes(visit, scheme, tmp_path):
    v = visit(CH1, color_scheme=scheme, wait_for=HEATMAP_LOVE)
    page = v.page
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    page.locator(f'{HEATMAP_LOVE} td[data-row="1"][data-col="1"]').click()
    ratios = page.locator(EXPLORER).first.evaluate(_CONTRAST_JS, [".tfc-readout", "label", ".tfc-title"])
    ratios.update(page.locator(HEATMAP_LOVE).first.evaluate(_CONTRAST_JS, [
        "th.tfc-rowhead", ".tfc-note", ".tfc-bar-value",
        'td[data-row="2"][data-col="0"]',                  # 浅色格子
        'td[data-row="1"][data-col="1"]',                  # 深色格子
    ]))
    low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
    assert low == {}, f"{scheme} 主题下对比度不足 4.5:1 的元素：{low}"
    page.locator(EXPLORER).first.screenshot(path=str(tmp_path / f"explorer-{scheme}.png"))
    v.assert_clean()


def test_chapter_has_colab_and_binder_launch_buttons(visit):
    repo = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    slug = repo["url"].removeprefix("https://github.com/").rstrip("/")
    nb = CH1.removesuffix(".html") + ".ipynb"
    v = visit(CH1)
    hrefs = v.page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert f"https://colab.research.google.com/github/{slug}/blob/{repo['branch']}/{nb}" in hrefs
    assert any(h.startswith(f"https://mybinder.org/v2/gh/{slug}/{repo['branch']}") and nb in h for h in hrefs)


def test_map_selector_switches_the_trained_heatmap(visit):
    trained = '.tfc-heatmap:has(select.tfc-map-select)'
    v = visit(CH1, wait_for=trained)
    heat = v.page.locator(trained).first
    select = heat.locator("select.tfc-map-select")
    labels = select.locator("option").all_inner_texts()
    assert labels[0] == "训练 0 步" and labels[-1] == "训练 50 步"
    # 笔记本里断言过：训练 50 步后几乎只看第 1 个位置；训练前没有哪个权重超过 0.2
    assert select.input_value() == str(len(labels) - 1)
    assert float(heat.locator("[data-testid=selected-weight]").inner_text()) > 0.9
    select.select_option("0")
    assert float(heat.locator("[data-testid=selected-weight]").inner_text()) < 0.2
    assert heat.locator("td.tfc-cell").count() == 6 * 20
    v.assert_clean()


def test_chinese_quotes_are_not_mangled(site_dir):
    # Sphinx 的智能引号（smartquotes）遇到汉字会把 "…" 的两边都变成右引号 ”…”；_config.yml 关掉了它
    import html as html_lib
    for path in site_pages(site_dir):
        page = (site_dir / path).read_text(encoding="utf-8")
        page = re.sub(r"<script.*?</script>", "", page, flags=re.S)
        # <pre> 与代码输出的表格里是程序打印的文字（例如第 13 章 GPT 生成的样本里可能只有半个引号），不归 Sphinx 管
        page = re.sub(r"<pre\b.*?</pre>", "", page, flags=re.S)
        page = re.sub(r'<div class="output text_html"><table\b.*?</table>', "", page, flags=re.S)   # 代码输出的表格
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", page))
        assert text.count("“") == text.count("”"), f"{path}：左引号 {text.count('“')} 个，右引号 {text.count('”')} 个"


@functools.lru_cache(maxsize=2)
def _prose(site_dir, skip: str) -> tuple:
    """每个页面正文的文字：((路径, 文字), …)，去掉 skip 选中的部分（代码、公式等）。
    网页带着几 MB 的小部件状态，解析一遍要几十秒：同一组参数只解析一次，下面几项检查共用。"""
    out = []
    for path in site_pages(site_dir):
        page = re.sub(r"<script\b.*?</script>", "", (site_dir / path).read_text(encoding="utf-8"), flags=re.S)
        article = BeautifulSoup(page, "html.parser").select_one("article.bd-article")
        if article is not None:
            for node in article.select(skip):
                node.decompose()
            out.append((path, article.get_text()))
    return tuple(out)


def test_bold_marks_render_next_to_chinese_punctuation(site_dir):
    # CommonMark 里，右边的 ** 前面是标点（如「：」）、后面紧跟汉字时不算收尾，两个 ** 会原样印在页面上；
    # 写成 **……**：（标点放在外面）
    for path, text in _prose(site_dir, "pre, code, script, style, .math, mjx-container, div.highlight"):
        stray = re.findall(r".{0,20}\*\*.{0,20}", text)
        assert not stray, f"{path}：没有变成粗体的 **：{stray}"


def test_no_unfilled_placeholders_in_prose(site_dir):
    # say(f"…" "…{x}…")：第二段少了 f，页面上就印出 {x} 而不是它的值（代码、公式、程序打印的文字除外）
    for path, text in _prose(site_dir, "pre, code, script, style, .math, mjx-container, div.highlight"):
        stray = re.findall(r".{0,20}\{[^{}\n]{1,40}\}.{0,20}", text)
        assert not stray, f"{path}：没有填上值的占位符：{stray}"
