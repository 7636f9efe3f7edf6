"""章末自测在浏览器里：答对、答错各显示对应的判决与解释，作答刷新后还在，手机宽度放得下，键盘能完成，
暗色主题可读；网站上第 14 章的自测里，问"本次运行算出的数"的那道题，答案就是页面上打印的那个数。"""
from __future__ import annotations

import re

import pytest

from conftest import chapter_page
from test_widget_views import _harness

from tfcourse.widgets import Quiz
from tfcourse.widgets.quiz import blind_scores, option_key


def _quiz():
    return Quiz([
        Quiz.single("s", "单选：哪个对？", [("甲", False, "甲错：回看第 1 节。"), ("乙", True, "乙对：第 2 节量过。"),
                                      ("丙", False, "丙错：回看第 3 节。")]),
        Quiz.multi("m", "多选：哪些对？", [("一", True, "一对。"), ("二", False, "二错：第 4 节。"),
                                      ("三", True, "三对。")]),
        Quiz.number("n", "填数：准确率是百分之几？", answer=85.26, tolerance=0.1, unit="%",
                    why="第 2 节打印的 85.26%。", hint="看第 2 节的输出。"),
    ], chapter=3)


def _opt(card, text):
    """选项按文字找（显示的顺序是洗过牌的）。"""
    return card.locator(".tfc-quiz-opt", has_text=text).locator("input")


def _verdict(card):
    return card.locator("[data-testid=verdict]").inner_text()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_each_question_right_and_wrong_shows_its_verdict_and_explanation(browser, theme):
    from test_site import _CONTRAST_JS
    w = _quiz()
    page, errors = _harness(browser, w, theme=theme, width=390)
    root = page.locator(".tfc-quiz")
    s, m, n = (root.locator(f"[data-testid=q-{k}]") for k in "smn")
    assert "共 3 题，已答 0 题，答对 0 题" in root.locator("[data-testid=score]").inner_text()
    # 单选：选错显示这个选项错在哪里（不泄露哪个对）；选对显示理由
    _opt(s, "甲").check()
    s.locator("[data-testid=check]").click()
    assert _verdict(s).startswith("✗") and "甲错：回看第 1 节。" in _verdict(s) and "乙对" not in _verdict(s)
    _opt(s, "乙").check()
    s.locator("[data-testid=check]").click()
    assert _verdict(s).startswith("✓") and "乙对：第 2 节量过。" in _verdict(s)
    # 多选：漏选一个也不算对，并说明"漏了"；多选了错的，说明错的那个
    _opt(m, "一").check()
    m.locator("[data-testid=check]").click()
    assert _verdict(m).startswith("✗") and "漏了" in _verdict(m)
    _opt(m, "二").check()
    m.locator("[data-testid=check]").click()
    assert _verdict(m).startswith("✗") and "二错：第 4 节。" in _verdict(m)
    _opt(m, "二").uncheck()
    _opt(m, "三").check()
    m.locator("[data-testid=check]").click()
    assert _verdict(m).startswith("✓")
    # 填数：容差之内算对（全角数字也认），之外给提示而不给答案；不是数时说清楚
    box = n.locator("[data-testid=number]")
    box.fill("86")
    box.press("Enter")                                          # 键盘：回车就是"核对"
    assert _verdict(n).startswith("✗") and "看第 2 节的输出" in _verdict(n) and "85.26" not in _verdict(n)
    box.fill("八十五")
    n.locator("[data-testid=check]").click()
    assert "读不出" in _verdict(n)
    box.fill("８５.３")
    n.locator("[data-testid=check]").click()
    assert _verdict(n).startswith("✓") and "85.26%" in _verdict(n)
    assert "共 3 题，已答 3 题，答对 3 题" in root.locator("[data-testid=score]").inner_text()
    # 作答按选项的 key 存（与位置无关），Python 的判分读同样的作答得到同样的结果
    saved = page.evaluate("window.state.answers")
    assert saved == {"s": [option_key("乙")], "m": saved["m"], "n": 85.3}
    assert sorted(saved["m"]) == sorted([option_key("一"), option_key("三")])
    assert w.grade(saved) == {"s": True, "m": True, "n": True}
    # 手机宽度放得下；文字与判决在两种主题里都够清楚
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    ratios = root.evaluate(_CONTRAST_JS, ["legend", ".tfc-quiz-opt label", ".tfc-quiz-verdict p", ".tfc-quiz-score",
                                          "button"])
    assert {k: r for k, r in ratios.items() if r is None or r < 4.5} == {}
    assert errors == []
    page.close()


def test_answers_survive_a_reload_and_reset_clears_them(browser, site_url):
    """作答存在 localStorage：同一个网站刷新后还在（判决也恢复）；点"重做"清掉。"""
    from conftest import open_page
    ctx, v = open_page(browser, site_url, chapter_page(14), wait_for=".tfc-quiz")
    page = v.page
    card = page.locator(".tfc-quiz [data-testid=q-pick-seed]")
    card.scroll_into_view_if_needed()
    card.locator("label", has_text="验证集准确率最高").click()
    card.locator("[data-testid=check]").click()
    assert _verdict(card).startswith("✓")
    page.reload(wait_until="load")
    page.wait_for_selector(".tfc-quiz")
    card = page.locator(".tfc-quiz [data-testid=q-pick-seed]")
    assert _verdict(card).startswith("✓")
    assert card.locator("input:checked").count() == 1
    assert "答对 1 题" in page.locator(".tfc-quiz [data-testid=score]").inner_text()
    card.locator("[data-testid=reset]").click()
    page.reload(wait_until="load")
    page.wait_for_selector(".tfc-quiz")
    assert page.locator(".tfc-quiz [data-testid=q-pick-seed] input:checked").count() == 0
    v.assert_clean()
    ctx.close()


def test_site_number_question_takes_its_answer_from_the_page(browser, site_url):
    """第 14 章：问 TF-IDF 准确率的那道题，答案 = 页面上第 2 节打印的数；照着页面填就判对。"""
    from conftest import open_page
    ctx, v = open_page(browser, site_url, chapter_page(14), wait_for=".tfc-quiz", width=390)
    page = v.page
    text = page.locator("main").inner_text()
    printed = re.search(r"TF-IDF 读原文：(\d+\.\d+)%", text)
    assert printed, "第 14 章的页面上没找到 TF-IDF 的准确率"
    card = page.locator(".tfc-quiz [data-testid=q-tfidf-acc]")
    card.scroll_into_view_if_needed()
    card.locator("[data-testid=number]").fill(printed.group(1))
    card.locator("[data-testid=check]").click()
    assert _verdict(card).startswith("✓"), _verdict(card)
    assert f"{printed.group(1)}%" in _verdict(card)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    v.assert_clean()
    ctx.close()


def test_the_book_quizzes_cannot_be_passed_blind(site_dir):
    """全书的自测按网页上显示的顺序：不读题的策略（总选第一个、总选最长的、总选最短的）比随便猜多得不到 5 个百分点；
    每章单选题的正确选项没有哪个位置占一半以上。"""
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "tools"))
    from quiz_audit import audit
    pages = sorted((site_dir / "book").rglob("ch*.html"))
    per, book = audit(pages)
    assert len(per) >= 16, f"只在 {len(per)} 章里找到自测"
    assert book["n"] >= 80
    names = {"first": "总选第一个", "longest": "总选最长的", "shortest": "总选最短的"}
    for strategy, name in names.items():
        assert book[strategy] <= book["guess"] + 0.05, f"不读题、{name}能得 {book[strategy]:.0%}，随便猜 {book['guess']:.0%}"
    crowded = {ch: r["positions"] for ch, r in per.items()
               if r["positions"] and max(r["positions"].values()) > sum(r["positions"].values()) / 2}
    assert crowded == {}, f"这些章的单选题答案挤在一个位置上（位置: 题数）：{crowded}"


POSITIONAL = re.compile(r"上面那|下面那|上一个选项|前一个选项|以上都|以上皆|同上|其他选项")


def test_no_option_refers_to_another_by_position(site_dir):
    """选项是洗过牌的：写"上面那种""以上都对"的选项，显示出来可能指向别的选项。"""
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "tools"))
    from quiz_audit import quizzes_in
    bad = [f"第 {quiz['chapter']} 章 {q['id']}：{o['text']}"
           for page in sorted((site_dir / "book").rglob("ch*.html")) for quiz in quizzes_in(page)
           for q in quiz["questions"] for o in q.get("options", []) if POSITIONAL.search(o["text"])]
    assert bad == [], f"这些选项按位置指向别的选项，洗牌之后会指错：{bad}"
    assert POSITIONAL.search("上面那种传错，在训练时也会变成 NaN")          # 这条检查真能抓到
