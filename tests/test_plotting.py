import warnings

import matplotlib
import matplotlib.pyplot as plt
import pytest

from tfcourse import start_chapter
from tfcourse.plotting import find_chinese_font, use_chinese_font


def _draw_chinese_figure():
    fig, ax = plt.subplots()
    ax.set_title("RNN 记忆衰减：开头的信息越传越稀")
    ax.set_xlabel("序列长度 L")
    ax.plot([1, 2], [3, -4])
    fig.canvas.draw()
    plt.close(fig)


def test_chinese_font_is_installed():
    assert find_chinese_font() is not None, "没有中文字体：apt-get install fonts-noto-cjk"


def test_course_font_draws_chinese_without_missing_glyphs():
    use_chinese_font(strict=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _draw_chinese_figure()
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert missing == []


def test_missing_glyphs_fail_loudly_in_strict_mode(monkeypatch):
    # 反向对照：如果字体设置失效，严格模式必须让画图报错（否则上面的测试就抓不到问题）
    monkeypatch.setenv("TFCOURSE_STRICT_FONTS", "1")
    with warnings.catch_warnings():
        start_chapter(1)
        matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans"]
        with pytest.raises(UserWarning, match="missing from font"):
            _draw_chinese_figure()
    use_chinese_font(strict=True)


def test_html_table_escapes_and_checks_row_width():
    from tfcourse.plotting import html_table

    out = html_table(["模型", "步数"], [["<RNN>", 75], ["注意力", 25]]).data
    assert "<th>模型</th>" in out and "&lt;RNN&gt;" in out and out.count("<tr>") == 3
    with pytest.raises(ValueError, match="应有 2 个单元格.*第 2 行有 1 个"):
        html_table(["a", "b"], [[1, 2], [3]])


def test_a_font_installed_after_matplotlib_cached_its_list_is_still_found(monkeypatch):
    """字体缓存建好之后才装的中文字体：缓存里没有它，find_chinese_font 也要找到（重启内核不会更新缓存）。"""
    from matplotlib import font_manager

    stale = [f for f in font_manager.fontManager.ttflist if "CJK" not in f.name and "WenQuanYi" not in f.name]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", stale)
    assert find_chinese_font() is not None
