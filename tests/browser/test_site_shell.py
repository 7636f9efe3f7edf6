"""网站外壳：中文搜索、手机与平板上的侧栏按钮、窄屏不横向滚动、公式不溢出、暗色输出区、中文界面、页面重量。"""
from __future__ import annotations

import html as html_lib
import json
import re

import pytest

from conftest import chapter_page, chapter_pages, COLOUR_JS

CJK = re.compile(r"[\u4e00-\u9fff]")
TOC_PAGES = ["book/preface.html", *chapter_pages()]
PHONE, TABLET, DESKTOP = 390, 900, 1280


def _text_of(site_dir, path: str) -> str:
    page = (site_dir / path).read_text(encoding="utf-8")
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", page))


def _article_text(site_dir, path: str) -> str:
    page = (site_dir / path).read_text(encoding="utf-8")
    m = re.search(r'<article class="bd-article">(.*?)</article>', page, flags=re.S)
    return _text_of_html(m.group(1) if m else page)


def _text_of_html(fragment: str) -> str:
    fragment = re.sub(r"<(script|style)\b.*?</\1>", "", fragment, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", fragment))


# ---------- 1. 中文搜索 ----------

def test_search_index_holds_chinese_terms(site_dir):
    text = (site_dir / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(text[text.index("(") + 1: text.rindex(")")])["terms"]
    chinese = [t for t in terms if CJK.search(t)]
    assert len(chinese) > 500, f"搜索索引 {len(terms)} 个词里只有 {len(chinese)} 个中文词（jieba 没装？）"
    for word in ("注意力", "掩码", "残差", "束搜索", "位置编码"):
        assert word in terms, f"搜索索引里没有「{word}」"


@pytest.mark.parametrize("word", ["注意力", "掩码", "束搜索"])
def test_searching_chinese_words_returns_the_chapters_that_contain_them(visit, site_dir, word):
    containing = {p for p in chapter_pages() if word in _article_text(site_dir, p)}
    assert containing, f"没有哪一章含「{word}」：测试的前提不成立"
    v = visit(f"search.html?q={word}")
    page = v.page
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results .search-summary, #search-results p');"
        " return s && s.textContent.trim().length > 0 && !document.querySelector('#search-progress')?.textContent.trim(); }",
        timeout=20_000)
    hrefs = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))")
    found = {h.split("#")[0].split("?")[0] for h in hrefs}
    found = {re.sub(r"^\./", "", h) for h in found}
    assert containing <= found, f"搜索「{word}」缺少这些章：{sorted(containing - found)}（找到 {sorted(found)}）"
    v.assert_clean()


# ---------- 2. 手机、平板与桌面上的侧栏按钮 ----------

def _visible(page, selector):
    loc = page.locator(selector)
    shown = [loc.nth(i) for i in range(loc.count()) if loc.nth(i).is_visible()]
    assert len(shown) == 1, f"应有且只有一个看得见的 {selector}，实际 {len(shown)} 个"
    return shown[0]


@pytest.mark.parametrize("width", [PHONE, TABLET])
def test_tapping_the_sidebar_buttons_opens_the_sidebars(visit, width):
    v = visit(chapter_page(3), width=width, height=800)
    page = v.page
    primary = _visible(page, ".primary-toggle")
    assert not page.locator("#pst-primary-sidebar-modal").evaluate("d => d.open")
    primary.tap()
    page.wait_for_function("() => document.querySelector('#pst-primary-sidebar-modal').open", timeout=5_000)
    nav = page.locator("#pst-primary-sidebar-modal a.reference", has_text="多头注意力").first
    assert nav.is_visible(), "左侧栏打开了，但看不见章节目录"
    box = page.locator("#pst-primary-sidebar-modal").bounding_box()
    assert box and box["width"] > 200, f"左侧栏宽度 {box}"
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('#pst-primary-sidebar-modal').open", timeout=5_000)

    secondary = _visible(page, ".secondary-toggle")
    secondary.tap()
    page.wait_for_function("() => document.querySelector('#pst-secondary-sidebar-modal').open", timeout=5_000)
    toc = page.locator("#pst-secondary-sidebar-modal nav a").first
    assert toc.is_visible(), "本页目录打开了，但里面没有看得见的链接"
    page.keyboard.press("Escape")
    v.assert_clean()


def test_desktop_menu_button_collapses_and_restores_the_sidebar(visit):
    v = visit(chapter_page(3), width=DESKTOP)
    page = v.page
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    button = _visible(page, ".primary-toggle")
    button.click()
    page.wait_for_timeout(400)
    assert not sidebar.is_visible() or sidebar.bounding_box()["width"] < 5, "点 ☰ 后左栏应收起"
    assert button.get_attribute("aria-expanded") == "false"
    button.click()
    page.wait_for_timeout(400)
    assert sidebar.is_visible() and sidebar.bounding_box()["width"] > 150, "再点一次 ☰ 左栏应回来"
    assert button.get_attribute("aria-expanded") == "true"
    v.assert_clean()


# ---------- 3. 窄屏不横向滚动 ----------

_WIDEST_JS = """(limit) => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.right > limit + 1 && r.width > 0 && getComputedStyle(el).position !== 'fixed') {
      const inside = [...el.children].some(c => c.getBoundingClientRect().right > limit + 1);
      if (!inside) out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} → ${Math.round(r.right)} px：`
                            + (el.textContent || '').trim().slice(0, 60));
    }
  }
  return out.slice(0, 8); }"""


@pytest.mark.parametrize("path", TOC_PAGES)
def test_no_page_is_wider_than_a_phone(visit, path):
    v = visit(path, width=PHONE, height=844)
    page = v.page
    page.wait_for_timeout(300)
    width = page.evaluate("document.documentElement.scrollWidth")
    culprits = page.evaluate(_WIDEST_JS, PHONE) if width > PHONE else []
    assert width <= PHONE, f"{path} 在 {PHONE} px 的屏幕上宽 {width} px；撑宽它的元素：{culprits}"
    v.assert_clean()


# ---------- 4. 行间公式 ----------

_EQUATIONS_JS = """async () => {
  if (!window.MathJax || !MathJax.startup) return [];
  await MathJax.startup.promise;
  const out = [];
  for (const item of MathJax.startup.document.math) {
    if (!item.display) continue;
    const c = item.typesetRoot;
    out.push({tex: item.math.trim().replace(/\\s+/g, ' ').slice(0, 70), scroll: c.scrollWidth, client: c.clientWidth,
              overflowX: getComputedStyle(c).overflowX});
  }
  return out; }"""


def test_wide_equations_scroll_inside_their_own_box_on_a_phone(visit):
    v = visit(chapter_page(3), width=PHONE, height=844)
    equations = v.page.evaluate(_EQUATIONS_JS)
    assert equations, "第 3 章应有行间公式"
    assert {e["overflowX"] for e in equations} <= {"auto", "scroll"}
    assert all(e["client"] <= PHONE for e in equations)
    assert any(e["scroll"] > e["client"] + 1 for e in equations), "390 px 上总该有比屏幕宽、需要滚动的公式"


# ---------- 5. 暗色主题下的输出区与表格 ----------

_PANEL_JS = "(selectors) => {\n" + COLOUR_JS + """  const out = [];
  for (const sel of selectors) {
    for (const el of [...document.querySelectorAll(sel)].slice(0, 12)) {
      if (!el.offsetParent) continue;
      const bg = background(el); const fg = over(parse(getComputedStyle(el).color), bg);
      const [a, b] = [lum(fg), lum(bg)];
      out.push({sel, text: (el.textContent || '').trim().slice(0, 30), background: lum(bg),
                contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)});
    }
  }
  return out; }"""

_OUTPUT_SELECTORS = [
    ".cell_output .output.stream pre", ".cell_output .output.text_plain pre",
    ".cell_output .output.text_html td", ".cell_output .output.text_html th",
    ".cell_output .tfc-widget", "div.cell_input pre", ".bd-article table td",
]


@pytest.mark.parametrize("n", [1, 4, 10])
def test_outputs_and_tables_are_dark_in_the_dark_theme(visit, n):
    v = visit(chapter_page(n), color_scheme="dark", wait_for=".tfc-widget")
    page = v.page
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    panels = page.evaluate(_PANEL_JS, _OUTPUT_SELECTORS)
    kinds = {p["sel"] for p in panels}
    assert ".cell_output .tfc-widget" in kinds and "div.cell_input pre" in kinds, kinds
    light = [p for p in panels if p["background"] > 0.06]
    assert light == [], f"暗色主题下这些地方仍是浅色底：{light[:5]}"
    low = [p for p in panels if p["contrast"] < 4.5]
    assert low == [], f"暗色主题下文字对比度不足 4.5:1：{low[:5]}"
    v.assert_clean()


def test_outputs_stay_light_in_the_light_theme(visit):
    v = visit(chapter_page(4), color_scheme="light", wait_for=".tfc-widget")
    panels = v.page.evaluate(_PANEL_JS, _OUTPUT_SELECTORS)
    assert panels and all(p["background"] > 0.8 for p in panels), [p for p in panels if p["background"] <= 0.8][:5]
    assert all(p["contrast"] >= 4.5 for p in panels)


# ---------- 6. 中文界面 ----------

def test_header_buttons_have_chinese_labels(visit):
    v = visit(chapter_page(1))
    labels = v.page.eval_on_selector_all(
        ".article-header-buttons button, .article-header-buttons a.btn, .primary-toggle, .secondary-toggle",
        "els => els.filter(e => e.offsetParent).map(e => e.getAttribute('aria-label') || e.getAttribute('title') || e.innerText.trim())")
    assert labels, "页眉没有看得见的按钮"
    assert all(label and CJK.search(label) for label in labels), labels


def test_preface_status_is_text_not_emoji(site_dir):
    text = _article_text(site_dir, "book/preface.html")
    assert text.count("已上线") >= 16 and "编写中" not in text      # 16 章都已上线，状态是文字
    assert not re.search("[\u2705\U0001F6A7\U0001F680]", text), "序言里还有依赖彩色 emoji 字体的符号"


# ---------- 7. 页面重量 ----------

def test_heavy_assets_load_only_where_needed(visit):
    urls = []
    v = visit("book/preface.html", on_response=lambda r: urls.append(r.url))
    names = " ".join(urls)
    assert "fontawesome" not in names and "fa-solid" not in names and "fa-brands" not in names, names
    assert "mathjax" not in names.lower(), "序言没有公式，不该加载 MathJax"
    assert "widgets-static" not in names and "embed-amd" not in names, "序言没有小部件，不该加载小部件脚本"
    v.assert_clean()
    urls.clear()
    v = visit(chapter_page(3), on_response=lambda r: urls.append(r.url), wait_for=".tfc-widget")
    names = [u.rsplit("/", 1)[-1].split("?")[0] for u in urls]
    assert "tex-chtml.js" in names and names.count("widgets-static.js") == 1, names
    assert "embed-amd.js" not in names and "require.js" not in names, names   # 不要 4 MB 的 html-manager
    assert not any("fontawesome" in n or n.startswith("fa-") for n in names), names
    v.assert_clean()
