"""tfcourse.notebook：展示源码时略去输入校验与指定的方法，核对单元打印一行 ✓。"""
from __future__ import annotations

from tfcourse import attention
from tfcourse.notebook import ELIDED, ok, teaching_source


def _example(x, n):
    """示例。"""
    # ---- 输入检查 ----
    if n < 1:
        raise ValueError("n 应为正整数")
    for name in ("x",):
        if x is None:
            raise ValueError(name)
    y = x * n                      # 讲课的那一行
    return y


class _Example:
    def forward(self, x):
        return x + 1

    # 只为对照 torch 才有的方法
    def load_torch_weights(self, other):
        return other


def test_input_checks_fold_into_one_line_and_the_lesson_stays():
    src = teaching_source(_example)
    assert src.count(ELIDED) == 1
    assert "raise" not in src and "输入检查" not in src
    assert "y = x * n" in src and "return y" in src


def test_skipped_methods_disappear_with_their_comment():
    src = teaching_source(_Example, skip=("load_torch_weights",))
    assert "load_torch_weights" not in src and "只为对照" not in src
    assert "def forward" in src


def test_package_listing_keeps_the_attention_formula():
    src = teaching_source(attention.scaled_dot_product_attention)
    assert "softmax" in src and "raise" not in src and ELIDED in src


def test_attention_listing_fits_the_page_code_box():
    """第 3 章在网页上展示这份源码：每行不超过 80 列（汉字按 2 列算），行尾的注释不会被代码框截掉。"""
    import unicodedata

    def columns(line):
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)

    src = teaching_source(attention.scaled_dot_product_attention)
    wide = [line for line in src.splitlines() if columns(line) > 80]
    assert not wide, wide


def test_ok_prints_one_check_line(capsys):
    ok("草稿 = 包")
    assert capsys.readouterr().out == "✓ 核对通过：草稿 = 包\n"


def test_say_shows_angle_brackets_as_text_not_tags(monkeypatch):
    from IPython import display as ipd

    shown = []
    monkeypatch.setattr(ipd, "display", lambda obj: shown.append(obj.data))
    from tfcourse.notebook import say

    say("哨兵 <X> 换掉「很好」，<Y> 换掉 A&B；`<pad>` 与 $a < b$ 不动")
    html = shown[0]
    assert "<X>" not in html and "&lt;X&gt;" in html and "&lt;Y&gt;" in html
    assert "A&amp;B" in html
    assert "`<pad>`" in html and "$a < b$" in html       # 代码片段与公式原样保留


def test_escaped_sentence_renders_the_brackets_in_myst():
    """myst 的 Markdown 解析器把实体还原成字面的 < >，而不是标签。"""
    from markdown_it import MarkdownIt

    from tfcourse.notebook import escape_html

    html = MarkdownIt("commonmark").render(escape_html("解码器输入 <bos> <X> 很 好"))
    assert "&lt;bos&gt; &lt;X&gt;" in html and "<bos>" not in html
    raw = MarkdownIt("commonmark").render("解码器输入 <bos> <X> 很 好")
    assert "&lt;bos&gt;" not in raw                     # 不转义时，它们被当成了 HTML 标签
