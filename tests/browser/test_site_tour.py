"""巡视整个网站：每个网页在桌面宽度、浅色主题下只打开一次（conftest 的 site_tour），逐页检查自包含、中文界面、
页面重量；再读构建出的每个网页（正文与小部件保存的状态），检查书页上没有侮辱性的词。

巡视的测试都在这一个文件里：make test 按文件把浏览器测试分给两个进程，巡视只在一个进程里做一次。"""
from __future__ import annotations

import html as html_lib
import json
import re

from conftest import chapter_pages, site_pages

from tfcourse.safety import find_offensive

CH1 = "book/p1-foundations/ch01-why-rnn-forgets.html"
TOC_PAGES = ["book/preface.html", *chapter_pages()]


def test_every_page_is_self_contained(site_tour):
    assert CH1 in site_tour and "book/preface.html" in site_tour
    dirty = {path: rec.problems() for path, rec in site_tour.items() if rec.problems()}
    assert dirty == {}, "这些网页不是自包含的：\n" + "\n".join(f"{p}：{'；'.join(v)}" for p, v in dirty.items())


# ---------- 中文界面 ----------

ENGLISH_UI = ["Show code cell", "Hide code cell", "Click to show", "Click to hide", "Toggle primary sidebar",
              "Toggle secondary sidebar", "Toggle hidden content", "Launch interactive content", "Copyright",
              "Source repositories", "Download this page", "Fullscreen mode", "Back to top", "Skip to main content",
              "Search this book", "Link to this heading", "Color mode", "System Settings"]


def test_no_page_shows_english_interface_text(site_tour):
    pages = TOC_PAGES + ["search.html"]
    assert set(pages) <= set(site_tour), sorted(set(pages) - set(site_tour))
    bad = []
    for path in pages:
        rec = site_tour[path]
        shown = [s for s in ENGLISH_UI if s in rec.text]
        labelled = sorted({a for a in rec.attrs if any(s in a for s in ENGLISH_UI)})
        if shown or labelled:
            bad.append(f"{path}：页面文字含 {shown}，按钮标签含 {labelled}")
        if "版权所有" not in rec.text:
            bad.append(f"{path} 的页脚没有中文版权行")
    assert bad == [], "\n".join(bad)


# ---------- 页面重量 ----------

TEXT_BUDGET, WIDGET_BUDGET = 500_000, 1_500_000


def test_page_weight_stays_within_budget(site_tour, capsys):
    pages = TOC_PAGES + ["search.html"]
    assert set(pages) <= set(site_tour), sorted(set(pages) - set(site_tour))
    rows, over = [], []
    for path in pages:
        rec = site_tour[path]
        assert rec.problems() == [], f"{path}：页面没有干净地加载完，称出的重量不可信：{rec.problems()}"
        assert rec.packed is not None, f"{path} 跳转到了 {rec.landed}，没有称出自己的重量"
        budget = WIDGET_BUDGET if rec.widgets else TEXT_BUDGET
        heavy = sorted(rec.by_file.items(), key=lambda kv: -kv[1])[:3]
        rows.append(f"{path:<58} {rec.raw / 1e6:6.2f} MB {rec.packed / 1e6:6.2f} MB  {'小部件' if rec.widgets else '文字'}  "
                    + ", ".join(f"{k} {s / 1e3:.0f} kB" for k, s in heavy))
        if rec.packed > budget:
            over.append(f"{path}：{rec.packed / 1e6:.2f} MB > {budget / 1e6:.1f} MB")
    with capsys.disabled():
        print("\n页面                                                        原始       gzip      类型  最重的三个文件（gzip）")
        print("\n".join(rows))
    assert over == [], f"超出预算的页面：{over}"


# ---------- 书页上的文字是干净的 ----------

WIDGET_STATE = re.compile(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', re.S)


def _strings(obj):
    """JSON 里的每一个字符串（小部件保存的全部文本：打开时看不见的样本也算，读者点几下就能看到）。"""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def page_texts(site_dir, path: str) -> list[str]:
    """一个网页给读者看的全部文字：去掉标签后的正文，加上小部件状态里的每个字符串。"""
    page = (site_dir / path).read_text(encoding="utf-8")
    states = [json.loads(html_lib.unescape(m)) for m in WIDGET_STATE.findall(page)]
    body = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return [html_lib.unescape(re.sub(r"<[^>]+>", " ", body))] + [s for st in states for s in _strings(st)]


def test_no_page_shows_a_slur_or_insult(site_dir):
    bad = {}
    for path in site_pages(site_dir):
        hits = sorted({h for text in page_texts(site_dir, path) for h in find_offensive(text)})
        if hits:
            bad[path] = hits
    assert bad == {}, f"这些网页上有侮辱性的词（生成的样本与评论显示前要过 tfcourse.safety.mask_offensive）：{bad}"


def test_the_slur_check_reads_widget_state(site_dir, tmp_path):
    """检查真的读到了小部件状态里藏着的样本：往一份网页副本的状态里放一个，它就报出来。"""
    path = chapter_pages()[0]
    page = (site_dir / path).read_text(encoding="utf-8")
    state = {"version_major": 2, "state": {"m": {"state": {"samples": ["服务员对小日本很热情"]}}}}
    fake = tmp_path / path
    fake.parent.mkdir(parents=True)
    fake.write_text(page.replace("</body>", '<script type="application/vnd.jupyter.widget-state+json">'
                                 + json.dumps(state, ensure_ascii=False) + "</script></body>"), encoding="utf-8")
    assert any("小日本" in find_offensive(t) for t in page_texts(tmp_path, path))


# ---------- 训练的进度条停在终点 ----------

def frozen_progress(page_html: str) -> list[str]:
    """网页保存的小部件状态里没有走完的进度条（值小于最大值）：读者看到的是一条停在半路的进度条。"""
    out = []
    for m in WIDGET_STATE.findall(page_html):
        for model in json.loads(html_lib.unescape(m)).get("state", {}).values():
            st = model.get("state", {})
            if model.get("model_name") in ("FloatProgressModel", "IntProgressModel") \
                    and st.get("value", 0) < st.get("max", 100):
                out.append(f"{st.get('value')}/{st.get('max')}（{st.get('description', '')}）")
    return out


def test_no_page_shows_a_progress_bar_frozen_half_way(site_dir):
    frozen = {}
    for path in site_pages(site_dir):
        bars = frozen_progress((site_dir / path).read_text(encoding="utf-8"))
        if bars:
            frozen[path] = bars
    assert frozen == {}, f"这些网页上的进度条停在半路（保存的小部件状态不是走完时的样子）：{frozen}"


def test_the_frozen_progress_check_sees_a_half_way_bar():
    state = {"state": {"a": {"model_name": "FloatProgressModel", "state": {"value": 1669, "max": 2244}},
                       "b": {"model_name": "FloatProgressModel", "state": {"value": 100, "max": 100}}}}
    page = ('<script type="application/vnd.jupyter.widget-state+json">'
            + html_lib.escape(json.dumps(state)) + "</script>")
    assert frozen_progress(page) == ["1669/2244（）"]
