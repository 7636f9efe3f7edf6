"""每一章的网页在桌面宽度（1280 px）下打开一次，读它的四样东西：章末的运行时间、生成的句子里的公式、
行间公式的宽度、小部件打开时的视图。每章只加载一次（模块级的 fixture 按章参数化，pytest 把同一章的测试排在一起），
四个测试各查一样，失败时各自报告。"""
from __future__ import annotations

import re

import pytest

from conftest import ROOT, chapter_pages, open_page
from test_site_shell import _EQUATIONS_JS
from test_widget_views import WIDGET_CLASSES, _same, intended_views, shown_view


@pytest.fixture(scope="module", params=chapter_pages())
def chapter(request, browser, site_url):
    """(路径, 打开的页面, 站外请求, 页面错误)：小部件渲染完、网络空闲之后。"""
    path = request.param
    ctx, v = open_page(browser, site_url, path)
    page, outside, errors = v.page, v.outside, v.errors
    yield path, page, outside, errors
    ctx.close()


# 页面不向读者转述失败的测量，也不把结果推给机器：这些说法一出现在正文里就是缺陷
MACHINE_EXCUSES = ("超出了预算", "机器负载", "反馈给我们", "抢 CPU", "换一台空闲的机器", "负载很重的机器",
                   "忙碌的机器", "这次测量没法")


def test_every_chapter_reports_its_run_time_and_blames_no_machine(chapter):
    path, page, outside, errors = chapter
    n = int(re.search(r"/ch(\d+)-", path).group(1))
    label = f"第 {n} 章" if n <= 16 else f"附录 {chr(ord('A') + n - 17)} "      # 第 17、18 个笔记本是附录 A、B
    text = page.locator("article").inner_text()
    assert re.search(rf"{label}运行时间：[\d.]+ 秒。", text), f"{label.strip()}页面末尾应打印运行时间"
    # 是否在预算之内由 make bench 报告，不在这里按墙上时间断言（机器之间快慢差一倍）
    found = [w for w in MACHINE_EXCUSES if w in text]
    assert found == [], f"第 {n} 章的正文把结果推给了机器：{found}"
    assert outside == [] and errors == [], (outside, errors)


def test_generated_sentences_render_their_math(chapter):
    # "本次运行"那些句子由代码生成（say(...)）；其中的 $…$ 要像正文一样排成公式，不能原样露出美元符号
    path, page, *_ = chapter
    texts = page.eval_on_selector_all(
        ".cell_output", "els => els.map(e => { const c = e.cloneNode(true); "
                        "c.querySelectorAll('pre').forEach(p => p.remove()); return c.innerText; })")
    raw = [t for t in texts if re.search(r"\$[^$\s][^$\n]*\$", t)]
    assert raw == [], f"{path} 有未渲染的公式：{[t[:80] for t in raw]}"


def test_display_equations_fit_their_column_on_desktop(chapter):
    path, page, *_ = chapter
    equations = page.evaluate(_EQUATIONS_JS)
    too_wide = [f"{e['tex']}…（{e['scroll']} px > {e['client']} px）" for e in equations
                if e["scroll"] > e["client"] + 1]
    assert too_wide == [], f"{path} 有 {len(too_wide)} 个行间公式比正文栏宽：{too_wide}"


def test_site_widgets_open_on_the_view_their_code_asks_for(chapter):
    path, page, outside, errors = chapter
    wanted = intended_views(ROOT / path.replace(".html", ".ipynb"))
    if not wanted:
        pytest.skip("这一章没有小部件")
    page.wait_for_function(f"document.querySelectorAll('.tfc-widget').length >= {len(wanted)}", timeout=30_000)
    seen, bad = {}, []
    for cls, view in wanted:
        i = seen.get(cls, 0)
        seen[cls] = i + 1
        roots = page.locator(WIDGET_CLASSES[cls])
        assert roots.count() > i, f"{cls}：笔记本显示了 {i + 1} 个，网页上只有 {roots.count()} 个"
        got = shown_view(cls, roots.nth(i))
        diff = {k: (v, got.get(k)) for k, v in view.items() if k in got and not _same(cls, k, v, got[k])}
        if diff:
            bad.append(f"第 {i + 1} 个 {cls}：(代码要的, 网页上的) = {diff}")
    for cls, n in seen.items():
        assert page.locator(WIDGET_CLASSES[cls]).count() == n, f"{cls} 的个数与笔记本不符"
    assert bad == [], "打开时的视图与创建它的代码不符：\n" + "\n".join(bad)
    assert outside == [] and errors == [], (outside, errors)
