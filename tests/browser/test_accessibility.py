"""无障碍审计：axe-core（WCAG 2.1 A/AA 规则）在 Chromium 里检查网站的每一个网页，浅色与暗色主题各一遍。

axe-core 来自 npm 仓库，整个文件随仓库提交在 tests/browser/vendor/axe-core/（tools/vendor.sh 取得），
注入页面后在本机运行，不发任何站外请求。小部件照它打开时的样子参与审计。
"""
from __future__ import annotations

import pathlib

import pytest

from conftest import open_page, site_pages, SITE

AXE = pathlib.Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# 跳转页（index.html 只有一个 meta refresh，指向前言）不单独审：打开它就离开了它，前言本身在列表里
PAGES = [p for p in (site_pages(SITE) if SITE.exists() else [])
         if 'http-equiv="Refresh"' not in (SITE / p).read_text(encoding="utf-8")[:2000]]


def audit(page) -> list[dict]:
    """在页面里运行 axe-core，返回违反的规则：[{id, help, nodes: [选择器…]}]。"""
    page.add_script_tag(path=str(AXE))
    return page.evaluate("""async (tags) => {
      const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
      return r.violations.map(v => ({id: v.id, help: v.help,
        nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + '  ' + (n.failureSummary || '').split('\\n').slice(1, 2).join('')),
        count: v.nodes.length}));
    }""", WCAG)


def describe(violations) -> str:
    return "\n".join(f"{v['id']}（{v['count']} 处）：{v['help']}\n    " + "\n    ".join(v["nodes"]) for v in violations)


def test_axe_is_vendored():
    head = AXE.read_text(encoding="utf-8")[:200]
    assert head.startswith("/*! axe v4."), head


def ready(page):
    """页面加载完（load）、小部件画好、字体就绪。不等"网络空闲"：它偶尔等满三分钟也等不到（一次 CI 里见过），
    审计要的只是画好的页面。"""
    if page.locator("script[type='application/vnd.jupyter.widget-state+json']").count():
        page.wait_for_selector(".tfc-widget", timeout=120_000)
    page.evaluate("document.fonts.ready.then(() => true)")


def check_page(browser, site_url, path, scheme):
    ctx, v = open_page(browser, site_url, path, color_scheme=scheme, idle=False)
    try:
        page = v.page
        ready(page)
        violations = audit(page)
    finally:
        ctx.close()
    assert not violations, f"{path}（{scheme}）：\n{describe(violations)}"


@pytest.mark.parametrize("path", PAGES)
def test_page_passes_the_wcag_audit(browser, site_url, path):
    """浅色主题（暗色主题在 test_accessibility_dark.py：分成两个文件，两个测试进程各审一半）。"""
    check_page(browser, site_url, path, "light")


def test_the_audit_catches_a_violation(browser, site_url):
    """反面对照：往页面里放一个没有名字的按钮和一段对比度太低的字，审计必须报出来。"""
    ctx, v = open_page(browser, site_url, PAGES[0], idle=False)
    try:
        ready(v.page)
        v.page.evaluate("""() => {
          const b = document.createElement('button'); document.body.prepend(b);
          const p = document.createElement('p'); p.textContent = '看不清的字';
          p.style.color = '#ddd'; p.style.background = '#fff'; document.body.prepend(p); }""")
        ids = {x["id"] for x in audit(v.page)}
    finally:
        ctx.close()
    assert {"button-name", "color-contrast"} <= ids
