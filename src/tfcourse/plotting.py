"""matplotlib 的中文字体设置与全书共用的绘图小工具。第 1 章引入。"""
from __future__ import annotations

import matplotlib
from matplotlib import font_manager

__all__ = ["CJK_FONT_CANDIDATES", "find_chinese_font", "use_chinese_font", "html_table"]

# 按优先级排列：Debian/Ubuntu 的 fonts-noto-cjk、其他发行版与 macOS/Windows 的常见中文字体。
CJK_FONT_CANDIDATES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "PingFang SC",
    "Heiti SC",
    "Microsoft YaHei",
    "SimHei",
)

INSTALL_HINT = (
    "没有找到中文字体，图里的汉字会显示成方框。"
    "Debian/Ubuntu/Colab：apt-get install -y fonts-noto-cjk；"
    "macOS 与 Windows 自带中文字体。装好后重启内核再运行。"
)


def _known_chinese_font() -> str | None:
    names = {f.name for f in font_manager.fontManager.ttflist}
    for name in CJK_FONT_CANDIDATES:
        if name in names:
            return name
    return None


def find_chinese_font() -> str | None:
    """返回系统里第一个可用的中文字体名，没有则返回 None。

    字体可能是在 matplotlib 建立字体缓存之后才装的（例如 Colab 里刚 apt 安装，或者本机先跑过一次再装字体：
    缓存文件不会自己更新，重启内核也没用）：缓存里没有时，把系统里的中文字体文件补登记一次再找。"""
    name = _known_chinese_font()
    if name is None:
        for path in font_manager.findSystemFonts():
            if any(tag in path.lower() for tag in ("cjk", "wqy", "sourcehan", "simhei", "yahei", "pingfang")):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    pass
        name = _known_chinese_font()
    return name


def use_chinese_font(strict: bool = False) -> str | None:
    """让 matplotlib 用中文字体画图，并让负号正常显示。

    找不到中文字体时：strict=True 抛出 RuntimeError，否则发出一次警告并返回 None。
    """
    name = find_chinese_font()
    if name is None:
        if strict:
            raise RuntimeError(INSTALL_HINT)
        import warnings

        warnings.warn(INSTALL_HINT, stacklevel=2)
        return None
    matplotlib.rcParams["font.family"] = ["sans-serif"]
    matplotlib.rcParams["font.sans-serif"] = [name, "DejaVu Sans"]
    matplotlib.rcParams["axes.unicode_minus"] = False
    return name


def html_table(header, rows, align: str = "right"):
    """把表头和若干行做成 HTML 表格（Jupyter、Colab 与网站里都能正常显示；Markdown 表格在输出里不会渲染）。"""
    import html as _html

    from IPython.display import HTML

    header = [str(h) for h in header]
    rows = [[str(v) for v in row] for row in rows]
    bad = [i for i, row in enumerate(rows) if len(row) != len(header)]
    if bad:
        raise ValueError(f"每一行应有 {len(header)} 个单元格（与表头一致），第 {bad[0] + 1} 行有 {len(rows[bad[0]])} 个。")
    head = "".join(f"<th>{_html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td style="text-align:{align}">{_html.escape(v)}</td>' for v in row) + "</tr>"
        for row in rows
    )
    return HTML(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
