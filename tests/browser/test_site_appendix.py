"""附录 A 的网页：RoPE 探索器在无头 Chromium 里能拖、能点，显示的打分与 Python 算的一致，
"两个都往后挪"不改变打分；窄屏与暗色主题下可读；运行时载入的 gpt-zh-llama 见 test_runtime.py。"""
from __future__ import annotations

import pytest

from conftest import chapter_page as _page, js_fixed

SET_RANGE = """(el, v) => { el.value = String(v);
  el.dispatchEvent(new Event('input', { bubbles: true })); }"""


@pytest.fixture(scope="module")
def rope_reference():
    from tfcourse.llama import load_gpt_zh_llama
    from tfcourse.widgets import RopeExplorer

    model, vocab = load_gpt_zh_llama()
    return RopeExplorer(model, vocab, "好", "很", query_pos=20, key_pos=17)


def test_rope_explorer_opens_on_the_text_view_and_drags(visit, rope_reference):
    v = visit(_page(17), wait_for=".tfc-rope [data-testid=score]")
    w = v.page.locator(".tfc-rope").first
    score = lambda: w.locator("[data-testid=score]").inner_text()
    offset = lambda: w.locator("[data-testid=offset]").inner_text()
    assert (offset(), score()) == ("3", js_fixed(rope_reference.score(20, 17), 4))   # 正文说的 m = 20、n = 17
    first = score()
    w.locator("[data-testid=shift]").click()                     # 两个都往后挪 8 位：距离不变，打分不变
    assert w.locator("[data-testid=query_pos]").input_value() == "28" and offset() == "3"
    assert score() == first
    w.locator("[data-testid=key_pos]").evaluate(SET_RANGE, 5)
    assert offset() == "23" and score() == js_fixed(rope_reference.score(28, 5), 4)
    w.locator("[data-testid=query_pos]").evaluate(SET_RANGE, 2)  # 查询挪到键之前：键跟着夹回
    assert w.locator("[data-testid=key_pos]").input_value() == "2" and offset() == "0"
    w.locator("[data-testid=query_pos]").evaluate(SET_RANGE, 999)  # 越界夹回
    assert w.locator("[data-testid=query_pos]").input_value() == str(rope_reference.n_positions - 1)
    assert w.locator("[data-testid=shift]").is_disabled()        # 已经在最后：挪不动的按钮不假装能点
    w.locator("[data-testid=reset]").click()
    assert (offset(), score()) == ("3", first)
    assert w.locator("[data-testid=rope-dials] svg").count() == 3
    v.assert_clean()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_rope_explorer_fits_a_phone_and_is_readable(visit, scheme):
    from test_site import _CONTRAST_JS

    v = visit(_page(17), color_scheme=scheme, width=390, height=844, wait_for=".tfc-rope [data-testid=score]")
    w = v.page.locator(".tfc-rope").first
    w.scroll_into_view_if_needed()
    box = w.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390 + 1
    ratios = w.evaluate(_CONTRAST_JS, [".tfc-readout", "label", ".tfc-title", ".tfc-note", "button"])
    low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
    assert low == {}, f"{scheme} 主题下对比度不足 4.5:1：{low}"
    v.assert_clean()
