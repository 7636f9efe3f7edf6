"""书的 PDF（make pdf，tools/pdf.py）：用构建好的网站排出 PDF，再用 poppler 的工具逐项检查——
页数与各章的起始页、字体全部嵌入、每章标题既在文字层也在书签里、没有缺字的方块、代码与输出没有一行被页边截掉、
小部件印成图并指向网站、自测答案在书末、参考答案不在书里。

make test 里只排前言与三章（PRINTED：第 1 章是最早的一章，第 11 章印着一个 U+FFFD、有最多的代码与输出，
第 14 章有最多的小部件；约 1/4 的页数），省下两分多钟；make pdf 排整本书，并用这同一组检查核对整本书
（TFCOURSE_PDF_CHAPTERS=all，TFCOURSE_PDF_OUT 是它写出的文件）。"""
from __future__ import annotations

import collections
import functools
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
from bs4 import BeautifulSoup

from conftest import ROOT, SITE, chapter_pages

sys.path.insert(0, str(ROOT / "tools"))
import pdf  # noqa: E402

MM = 72 / 25.4
_ENV = os.environ.get("TFCOURSE_PDF_CHAPTERS", "1 11 14")
PRINTED = None if _ENV == "all" else {int(c) for c in _ENV.split()}


def _run(*cmd) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        pytest.fail(f"没有 {cmd[0]}：请先运行 tools/system-deps.sh pdf（poppler-utils）。")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module")
def book(browser, tmp_path_factory):
    out = pathlib.Path(os.environ.get("TFCOURSE_PDF_OUT") or tmp_path_factory.mktemp("pdf") / "book.pdf")
    report = pdf.build(SITE, out, chapters=PRINTED, browser=browser)
    info = _run("pdfinfo", str(out))
    height = float(re.search(r"Page size:\s+[\d.]+ x ([\d.]+)", info).group(1))
    width = float(re.search(r"Page size:\s+([\d.]+) x", info).group(1))
    # 正文区域：去掉上下页边里的页眉（书名）与页脚（页码），跨页的代码行才能接起来比较
    top, bottom = 16 * MM, 16 * MM
    body = _run("pdftotext", "-raw", "-x", "0", "-y", str(int(top)), "-W", str(int(width)),
                "-H", str(int(height - top - bottom)), str(out), "-")
    return {"path": out, "report": report, "info": info, "text": _run("pdftotext", str(out), "-"), "body": body,
            "doc": BeautifulSoup(report["document"], "html.parser")}


def _outline(path) -> list[tuple[int, int, str]]:
    """书签：(层级, 页码, 标题) 的列表，按出现的顺序。"""
    xml = _run("pdftohtml", "-xml", "-i", "-stdout", "-q", str(path))
    xml = xml[xml.index("<outline>"):]
    items, depth = [], 0
    for m in re.finditer(r"<outline>|</outline>|<item page=\"(\d+)\">(.*?)</item>", xml):
        if m.group(0) == "<outline>":
            depth += 1
        elif m.group(0) == "</outline>":
            depth -= 1
            if depth == 0:
                break
        else:
            items.append((depth, int(m.group(1)), BeautifulSoup(m.group(2), "html.parser").get_text()))
    return items


@functools.lru_cache(maxsize=1)
def _titles() -> dict[str, str]:
    out = {}
    for path in chapter_pages():
        if PRINTED is not None and int(re.search(r"/ch(\d\d)-", path).group(1)) not in PRINTED:
            continue
        soup = BeautifulSoup((SITE / path).read_text(encoding="utf-8"), "html.parser")
        h1 = soup.select_one("article.bd-article h1")
        for a in h1.select("a.headerlink"):
            a.decompose()
        out["ch" + re.search(r"/ch(\d\d)-", path).group(1)] = pdf._heading_text(h1)
    return out


def test_the_whole_book_prints_offline_without_errors(book):
    report = book["report"]
    assert report["outside"] == [], f"打印页想访问站外地址：{report['outside'][:5]}"
    assert report["errors"] == [], f"打印页的脚本报错：{report['errors'][:5]}"
    pages = int(re.search(r"Pages:\s+(\d+)", book["info"]).group(1))
    assert pages == report["pages"]
    assert "A4" in book["info"]
    # 前言、各章、自测答案依次排开，每章另起一页、至少占几页（一章少于 4 页说明正文丢了一大块）
    keys = ["preface"] + sorted(_titles()) + ["answers"]
    starts = [report["numbers"][k] for k in keys]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), dict(zip(keys, starts))
    lengths = [b - a for a, b in zip(starts, starts[1:] + [pages + 1])]
    assert min(lengths[1:-1]) >= 4, dict(zip(keys, lengths))
    print(f"PDF：{pages} 页，{report['bytes'] / 1e6:.1f} MB，排版 {report['seconds']:.0f} 秒")


def test_every_font_is_embedded_with_a_text_mapping(book):
    rows = _run("pdffonts", str(book["path"])).splitlines()[2:]
    assert rows, "pdffonts 没有列出任何字体"
    # 列：name type encoding emb sub uni object ID——从右往左取，name 与 type 里可能有空格
    cols = [r.split() for r in rows]
    not_embedded = [r for r, c in zip(rows, cols) if c[-5] != "yes"]
    no_unicode = [r for r, c in zip(rows, cols) if c[-3] != "yes"]
    assert not not_embedded, f"这些字体没有嵌入：{not_embedded[:5]}"
    assert not no_unicode, f"这些字体没有 ToUnicode（文字层复制出来是乱码）：{no_unicode[:5]}"
    assert "注意力" in book["text"] and "自注意力" in book["text"]


def test_chapter_titles_are_in_the_text_and_the_bookmarks(book):
    text = _squash(book["text"])
    items = _outline(book["path"])
    numbers = book["report"]["numbers"]
    by_title = {}
    for d, p, t in items:                                   # 章名在书末的自测答案下面还会出现一次：取第一次
        by_title.setdefault(t, (d, p))
    parts = [t for d, _, t in items if d == 1 and t.endswith("）") and "篇" in t]
    assert len(parts) == len({p["part"] for p in pdf.pages(PRINTED) if p["key"] != "preface"}), parts
    for key, title in _titles().items():
        assert _squash(title) in text, f"{key} 的标题不在 PDF 的文字层里：{title}"
        assert title in by_title, f"{key} 的标题不在书签里：{title}"
        depth, page = by_title[title]
        assert depth == 2 and page == numbers[key], (title, depth, page, numbers[key])
    assert ("自测答案" in by_title) and by_title["自测答案"][1] == numbers["answers"]
    sections = [t for d, _, t in items if d == 3]
    assert len(sections) >= len(_titles()) * 8, f"书签里的节太少：{len(sections)}"
    assert not [t for t in sections if "\\" in t], "书签里还有 TeX 命令"


def _font_coverage() -> set[int]:
    """本机字体（fontconfig 能找到的全部）加上网站自带的 MathJax 字体能画出的码位。"""
    from fontTools.ttLib import TTCollection, TTFont

    files = _run("fc-list", "--format", "%{file}\n").split()
    files += [str(p) for p in (ROOT / "book/_extra/_static/vendor/mathjax").rglob("*.woff")]
    cover = set()
    for f in sorted(set(files)):
        try:
            fonts = TTCollection(f, lazy=True).fonts if f.endswith((".ttc", ".otc")) else [TTFont(f, lazy=True)]
        except Exception:                                    # noqa: BLE001 —— 少数位图字体读不了，不影响判断
            continue
        for font in fonts:
            cover.update((font.getBestCmap() or {}).keys())
    return cover


def test_no_tofu_every_character_has_a_font(book):
    """缺字时 Chromium 画一个方块，文字层里却可能什么都不留——所以查的是打印前页面上真正显示的文字
    （连同小部件画出的字）：每个字符都要有一种字体能画。"""
    shown = {ch for ch in book["report"]["rendered"] + book["text"] if not ch.isspace() and ch != "\x0c"}
    # U+FFFD 是 pdftotext 映射不出字形时写的；正文里只有第 11 章讲 decode 时真的印了它
    assert book["text"].count("\ufffd") <= book["report"]["rendered"].count("\ufffd"), "文字层里有映射不出的字形"
    assert len([c for c in shown if "\u4e00" <= c <= "\u9fff"]) > 1000      # 中文真的印出来了
    cover = _font_coverage()
    missing = sorted(c for c in shown if ord(c) not in cover)
    assert not missing, f"这些字符没有任何字体能画，印出来是方块：{[f'U+{ord(c):04X} {c}' for c in missing[:20]]}"


def test_nothing_is_wider_than_the_paper_or_clipped(book):
    """比纸宽的内容会让 Chromium 把整页等比缩小；overflow 不是 visible 的框会把多出的部分裁掉。"""
    layout = book["report"]["layout"]
    assert layout["width"] == pdf.WIDTH_PX
    assert layout["wide"] == [], f"比纸宽：{layout['wide'][:8]}"
    assert layout["clipped"] == [], f"在框里被裁掉：{layout['clipped'][:8]}"


def test_no_line_of_code_or_output_is_cut_at_the_margin(book):
    """代码单元与输出里的每一行（去掉空白后）都要完整地出现在 PDF 的正文里（按内容流的顺序取文字：
    同一行里的中文注释与代码用的是两种字体，按版面取会被拆开）。"""
    body = _squash(book["body"])
    lines = []
    for pre in book["doc"].select("article pre"):
        lines += [_squash(ln) for ln in pre.get_text().split("\n") if len(_squash(ln)) >= 3]
    assert len(lines) > 200 * len(_titles()), f"打印页里的代码行太少：{len(lines)}"
    missing = [ln for ln in lines if ln not in body]
    assert not missing, f"{len(missing)} / {len(lines)} 行代码或输出在 PDF 里不完整，例如：{missing[:5]}"


def test_widgets_are_pictured_and_point_to_the_website(book):
    doc, text = book["doc"], _squash(book["text"])
    notes = doc.select("p.tfc-print-live")
    n = len(_titles())
    assert len(notes) >= 2 * n, f"小部件的说明太少：{len(notes)}"
    live = [n for n in notes if "交互版" in n.get_text()]
    quiz = [n for n in notes if "自测答案" in n.get_text()]
    assert len(quiz) == n and len(live) == len(notes) - n
    assert text.count(_squash("这是小部件打开时的样子")) == len(live)
    assert "小部件加载失败" not in text
    for n in live:                                          # 每条说明指向它所在的那一章
        chapter = n.find_parent("section", class_="tfc-print-chapter")["id"]
        assert f"第 {int(chapter[2:])} 章" in n.get_text() or f"/{chapter}-" in n.get_text(), n.get_text()


def test_self_check_answers_are_at_the_back(book):
    state = json.loads(book["doc"].select_one('script[type="application/vnd.jupyter.widget-state+json"]').string)
    quizzes = [m["state"] for m in state["state"].values()
               if m.get("model_module") == "anywidget" and "questions" in m["state"]]
    assert sorted(q["chapter"] for q in quizzes) == sorted(int(k[2:]) for k in _titles())
    back = book["body"][book["body"].rindex("自测答案"):]     # 按内容流的顺序：题干里的拉丁字母不被挪走
    flat = _squash(back)
    questions = [q for quiz in quizzes for q in quiz["questions"]]
    assert flat.count("答案：") == len(questions)
    for q in questions:
        assert _squash(q["prompt"])[:40] in flat, f"书末没有这道题：{q['prompt'][:40]}"
        if q["kind"] == "number":
            shown = pdf._fmt_number(q["answer"], q["tolerance"])
            assert _squash(f"答案：{shown}") in flat, (q["prompt"][:30], shown)
            assert abs(float(shown.replace(",", "")) - q["answer"]) <= q["tolerance"] + 1e-9
        else:
            letters = "、".join("ABCDEFGH"[j] for j, o in enumerate(q["options"]) if o["correct"])
            assert _squash(f"答案：{letters}") in flat


def test_solutions_and_folded_checks_are_left_out(book):
    site_text = "".join((SITE / p).read_text(encoding="utf-8") for p in chapter_pages()
                        if PRINTED is None or int(re.search(r"/ch(\d\d)-", p).group(1)) in PRINTED)
    assert "参考答案（先自己做，再点开看）" in site_text                  # 网站上有（折叠着）
    text = book["text"]
    assert "参考答案（先自己做，再点开看）" not in text
    assert "显示代码" not in text and "隐藏代码" not in text          # 折叠按钮不印
    counts = collections.Counter(c for cell in book["doc"].select("div.cell") for c in cell.get("class", []))
    assert counts["tag_solution"] == 0 and counts["tag_colab-setup"] == 0
    assert counts["tag_hide-cell"] > 0                       # 思考题的计算照印（网站上折叠着）


def test_the_site_links_the_pdf_only_when_it_exists(site_url, browser):
    from conftest import open_page
    exists = (SITE / pdf.OUT.name).exists()
    ctx, v = open_page(browser, site_url, chapter_pages()[6])
    try:
        links = v.page.locator("a.btn-download-book-pdf-button")
        assert links.count() == (1 if exists else 0)
        if exists:
            href = links.first.get_attribute("href")
            assert v.page.request.get(f"{site_url}/{pathlib.PurePosixPath(chapter_pages()[6]).parent}/{href}").ok
        v.assert_clean()
    finally:
        ctx.close()
