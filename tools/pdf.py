"""把构建好的网站排成一本 PDF（make pdf）：前言 + 16 章 + 附录 + 书末的「自测答案」。

做法：从 `_build/html` 里按目录顺序取出每一页的正文（已经执行过的笔记本：输出、图、表、公式都在），
拼成一份单独的打印页，用测试已经装好的 Chromium 打印成 A4 的 PDF。小部件由网站自己的
widgets-static.js 画出打开时的样子（和网页上一样，不要内核），下面加一行说明交互版在网站上。

排版上的取舍（docs/pdf.md「内容与取舍」也写了）：
- 编程练习的参考答案（标签 solution）不收进 PDF——留给读者自己做，网站与笔记本里点开就能看到；
  折叠起来的核对代码不印（它们的输出照印）；思考题的答案与计算（hide-cell）照印；
  训练的进度条、每章末尾的计时、Colab 安装单元不印。
- 代码和输出自动换行，不超出页边；每章另起一页；打印前查一遍版面：没有比纸宽、也没有在框里被裁掉的内容。
- 目录带页码：先排一遍量出各章、各节的起始页，再把页码填进去排第二遍（两遍一致才算数）；
  书签（篇 → 章 → 节）由 pypdf 按这些位置写进 PDF（Chromium 自己生成的书签缺项）。
- 自测的题目印在各章末尾（选项标 A、B、C，不印按钮），答案与解释集中在书末。

用法：python tools/pdf.py [--site _build/html] [--out _build/pdf/transformer-from-scratch.pdf] [--chapters 2 14]
"""
from __future__ import annotations

import argparse
import functools
import html
import http.server
import json
import math
import pathlib
import posixpath
import re
import socketserver
import sys
import threading
import time
from urllib.parse import urldefrag, urlsplit

import yaml
from bs4 import BeautifulSoup

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from tfcourse_site import pdf_source  # noqa: E402  —— PDF 放在哪里只在网站扩展里写一次（它据此加下载链接）

SITE = ROOT / "_build" / "html"
OUT = pdf_source(ROOT)
CHROMIUM = "/usr/bin/chromium"
PRINT_PATH = "/_tfcourse_print/book.html"      # 打印页的虚拟地址（只在打印时由 Chromium 的请求拦截提供，不写进网站）
STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"
WIDTH_PX = 688                                 # A4 宽 210 mm 减去左右页边各 14 mm，按 96 px/in

PRINT_CSS = """
html, body { background: #fff !important; }
body { margin: 0; font-size: 10.5pt; line-height: 1.65; }
.bd-article-container, .bd-article, .bd-main, .bd-content { max-width: none !important; width: auto !important;
  padding: 0 !important; margin: 0 !important; overflow: visible !important; }
.tfc-print-chapter { break-before: page; }
h1, h2, h3, h4 { break-after: avoid; }
h1 { font-size: 20pt; margin-top: 0; }
h2 { font-size: 15pt; } h3 { font-size: 12.5pt; }
a.headerlink, button.copybtn, .copybtn, .toggle-button, .tfc-print-drop { display: none !important; }
img, figure, svg, table, .admonition, .cell_input, .tfc-quiz-q { break-inside: avoid; }
.cell_input pre { break-inside: auto; }          /* 比一页长的代码单元照常分页 */
span.math, .math { overflow: visible !important; }
/* MathJax 给读屏软件的隐藏副本：不画出来，但原样的宽度会让页面比纸宽（Chromium 因此会把整页缩小） */
html body mjx-container mjx-assistive-mml { width: 1px !important; height: 1px !important; overflow: hidden !important; }
/* 自测印成纸上的题：选项前标 A、B、C（书末的答案按字母给），按钮、判分行和输入框不印 */
.tfc-quiz-score, .tfc-quiz-actions, .tfc-quiz-verdict { display: none !important; }
.tfc-quiz-options { counter-reset: tfc-opt; }
.tfc-quiz-opt { counter-increment: tfc-opt; }
.tfc-quiz-opt input { display: none !important; }
.tfc-quiz-opt label::before { content: counter(tfc-opt, upper-alpha) ". "; font-weight: bold; }
.tfc-quiz-num input { border: none !important; border-bottom: 1px solid #888 !important; background: none !important; }
.tfc-quiz-q legend { float: left; width: 100%; margin-bottom: 0.4em; }
.tfc-quiz-q legend + * { clear: both; }
img { max-width: 100% !important; height: auto !important; }
/* 代码与输出：换行而不是超出页边 */
pre, pre code { white-space: pre-wrap !important; overflow-wrap: anywhere !important; word-break: break-all; }
code, code .pre { white-space: normal !important; overflow-wrap: anywhere; }
pre code, pre code .pre { white-space: pre-wrap !important; }
div.highlight pre, .cell_output pre { font-size: 8.3pt !important; line-height: 1.45 !important;
  padding: 0.45em 0.6em !important; overflow: visible !important; max-height: none !important; }
.cell_output, .cell_output .output, .output, div.highlight, .cell_input, .docutils.container,
.tfc-static-widget, .tfc-static-widget * { overflow: visible !important; max-height: none !important; }
table { font-size: 8.3pt; max-width: 100% !important; display: table !important; }
mjx-container[display="true"] { overflow: visible !important; }
details { display: block; }
.tfc-print-live { font-size: 8.5pt; color: #444; margin: 0.2em 0 1.2em; padding-left: 0.6em;
  border-left: 3px solid #9ab; }
/* 主题的打印样式藏起每页的第一个 h1（它在网页上另有页眉）；这里每章的标题都要印出来 */
.bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
.bd-main .bd-content { margin-left: 0 !important; }
.tfc-print-toc ol { list-style: none; padding-left: 0; font-size: 9.5pt; }
.tfc-print-toc li { margin: 0.1em 0; break-inside: avoid; }
.tfc-print-toc li a { display: flex; color: inherit; text-decoration: none; }
.tfc-print-toc li .dots { flex: 1; border-bottom: 1px dotted #aaa; margin: 0 0.4em 0.35em; }
.tfc-print-toc li.part { font-weight: bold; margin-top: 0.9em; font-size: 10.5pt; }
.tfc-print-toc li.chapter { font-weight: bold; margin-top: 0.5em; }
.tfc-print-toc li.section { padding-left: 1.5em; }
.tfc-print-cover { text-align: center; padding-top: 35%; break-after: page; }
.tfc-print-cover .title { font-size: 30pt; font-weight: bold; margin-bottom: 0.3em; }
.tfc-print-cover .subtitle { font-size: 12pt; color: #444; margin-bottom: 3em; }
.tfc-print-cover .note { margin: 4em 8% 0; text-align: left; font-size: 9.5pt; color: #333; }
.cell_output table { font-size: 7.8pt; }
.tfc-print-answers h2 { font-size: 13pt; }
.tfc-print-answers ol > li { margin-bottom: 0.7em; }
.tfc-print-answers pre { font-size: 8pt; }
.tfc-print-answers .ans { font-weight: bold; }
.tfc-print-answers .why { color: #333; }
"""

FOOTER = ('<div style="width:100%;font-size:8px;color:#666;font-family:\'Noto Sans CJK SC\',sans-serif;'
          'text-align:center;"><span class="pageNumber"></span></div>')
HEADER = "<span></span>"                       # 不要页眉（Chromium 的页眉每页一样，连封面也印）


@functools.lru_cache(maxsize=1)
def toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def pages(chapters: set[int] | None = None) -> list[dict]:
    """目录顺序的页面：{'file': 'book/…', 'key': 'preface' / 'ch02', 'part': 篇名}。chapters 给定时只取这些章（连同前言）。"""
    out = [{"file": toc()["root"], "key": "preface", "part": None, "n": 0}]
    for part in toc()["parts"]:
        for c in part["chapters"]:
            n = int(re.search(r"/ch(\d\d)-", c["file"]).group(1))
            if chapters is None or n in chapters:
                out.append({"file": c["file"], "key": f"ch{n:02d}", "part": part["caption"], "n": n})
    return out


def _resolve(page_file: str, url: str) -> str:
    """网页里的相对地址 → 以网站根为起点的路径（/_images/…）。"""
    base = posixpath.dirname("/" + page_file + ".html")
    return posixpath.normpath(posixpath.join(base, url))


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and not url.startswith(("data:", "blob:", "mailto:"))


# 纸上没有的字形：网页上由读者系统里的彩色表情字体画，打印机上没有这种字体，换成普通字体里有的同义符号
SUBSTITUTES = {"❌": "✗"}
QUIZ_INTRO = ("读完本章，先自己作答下面几道题，再翻到书末「自测答案」对照，每题都附了解释。填数的题，答案是构建这本 PDF "
              "时那次运行算出的数。网站上的同一组题可以当场判分。")


def site_url() -> str:
    """本书网站的地址（_config.yml 的 html.baseurl）；没有配置时是空串，小部件的说明改为指向章名。"""
    return str(((yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8")) or {}).get("html") or {})
               .get("baseurl") or "").rstrip("/")


def _rewrite(article, page: dict, keys: dict[str, str], states: dict) -> list[dict]:
    """就地改写一页的正文；返回这一页里自测小部件的题目（给书末的答案）。"""
    key = page["key"]
    soup = BeautifulSoup("", "html.parser")
    # 不印：折叠起来的检查代码（输出照印）、编程练习的参考答案、Colab 安装单元、每章末尾的计时
    for cell in article.select("div.cell"):
        classes = set(cell.get("class", []))
        source = cell.select_one(".cell_input")
        if (classes & {"tag_solution", "tag_remove-cell", "tag_colab-setup"}
                or (source is not None and "clock.report()" in source.get_text())):
            cell.decompose()
    for det in article.select("div.tag_hide-input details.hide.above-input"):
        det.decompose()
    for det in article.select("details.hide"):          # 思考题的计算（hide-cell）：纸上照印代码与输出
        for summary in det.find_all("summary", recursive=False):
            summary.decompose()
        det.name = "div"
    for det in article.select("details"):
        det["open"] = ""                               # 其余折叠内容（深入、提示）在纸上展开
    for a in article.select("a.headerlink"):
        a.decompose()
    # id 加上章的前缀，各章的 #id1 不再撞车
    for el in article.select("[id]"):
        el["id"] = f"{key}-{el['id']}"
    for el in article.select("[src]"):
        if _is_local(el["src"]):
            el["src"] = _resolve(page["file"], el["src"])
    for a in article.select("a[href]"):
        href = a["href"]
        if not _is_local(href):
            continue
        path, frag = urldefrag(href)
        if not path:
            a["href"] = f"#{key}-{frag}" if frag else f"#{key}"
            continue
        target = _resolve(page["file"], path).lstrip("/")
        target = target[:-5] if target.endswith(".html") else target
        if target in keys:
            a["href"] = f"#{keys[target]}-{frag}" if frag else f"#{keys[target]}"
        else:                                          # 网站里别的东西（源文件、索引）：纸上只留文字
            a.unwrap()
    for text in article.find_all(string=lambda t: any(ch in t for ch in SUBSTITUTES)):
        new = str(text)
        for old, sub in SUBSTITUTES.items():
            new = new.replace(old, sub)
        text.replace_with(new)
    quizzes = []
    url = site_url()
    label = f"第 {page['n']} 章" if page["n"] <= 16 else f"附录 {chr(ord('A') + page['n'] - 17)}"
    where = f" {url}/{page['file']}.html" if url else f"本书网站的{label}"
    for view in article.select(f'script[type="{VIEW}"]'):
        try:
            entry = states.get(json.loads(view.string or "{}").get("model_id"))
        except json.JSONDecodeError:
            continue
        if not entry or entry.get("model_module") != "anywidget":
            view.decompose()                           # 训练的进度条：停下时的样子在纸上没有意义
            continue
        note = soup.new_tag("p", attrs={"class": "tfc-print-live"})
        if "questions" in entry["state"]:
            quizzes.append(entry["state"])
            note.append("答案与解释在书末：")
            link = soup.new_tag("a", href=f"#answers-{key}")
            link.string = "自测答案"
            note.append(link)
            note.append("。")
            section = view.find_parent("section")
            if section is not None:
                page["quiz_id"] = section.get("id")
                for n, para in enumerate(section.find_all("p", recursive=False)):
                    if n == 0:
                        para.string = QUIZ_INTRO
                    else:
                        para.decompose()
        else:
            note.string = f"▲ 这是小部件打开时的样子。交互版（拖动、点击、换上自己的输入）在{where}。"
        view.insert_after(note)
    return quizzes


_TEX = [("^\\top", "ᵀ"), ("\\top", "ᵀ"), ("\\times", "×"), ("\\cdot", "·"), ("\\to", "→"), ("\\sqrt", "√"),
        ("\\text", ""), ("\\mathrm", ""), ("\\(", ""), ("\\)", ""), ("{", ""), ("}", ""), ("$", "")]


def _heading_text(h) -> str:
    """标题的纯文字（书签里用）：行内公式的 TeX 换成近似的字符，\\sqrt{d_k} → √d_k。"""
    text = " ".join(h.get_text().split())
    for tex, plain in _TEX:
        text = text.replace(tex, plain)
    return text.replace("  ", " ")


def _fmt_number(x: float, tol: float) -> str:
    """填数题的答案：小数位跟着容差走（容差 0.05 → 一位，0.0005 → 三位，≥ 0.5 → 整数）。"""
    digits = 0 if tol <= 0 else max(0, min(6, round(-math.log10(tol))))
    if tol <= 0 and not float(x).is_integer():
        return f"{x:g}"
    return f"{x:,.{digits}f}"


def _with_unit(value: str, unit: str) -> str:
    return value + ((" " if unit[:1].isascii() and unit[:1].isalnum() else "") + unit if unit else "")


def answers_html(chapter_quizzes: list[tuple[dict, list[dict]]]) -> str:
    """书末的自测答案：每题写出正确选项（或数）和它的解释；章名旁边注明题目在哪一页（链接回去）。"""
    out = ['<section class="tfc-print-chapter tfc-print-answers" id="answers"><h1>自测答案</h1>',
           "<p>各章末尾「自测」的答案与解释。选择题的字母是题目里选项的顺序；填数题的答案是构建这本 PDF "
           "时那次运行算出的数，括号里是判分时允许的误差。</p>"]
    letters = "ABCDEFGH"
    for page, quizzes in chapter_quizzes:
        if not quizzes:
            continue
        back = f'<a href="#{page["quiz_id"]}">回到题目</a>' if page.get("quiz_id") else ""
        out.append(f'<section id="answers-{page["key"]}"><h2>{html.escape(page["title"])}</h2>'
                   f'<p class="back">{back}</p><ol>')
        for quiz in quizzes:
            for q in quiz["questions"]:
                prompt = html.escape(q["prompt"])
                code = f'<pre>{html.escape(q["code"])}</pre>' if q.get("code") else ""
                if q["kind"] == "number":
                    unit = q.get("unit") or ""
                    ans = _with_unit(_fmt_number(q["answer"], q["tolerance"]), unit)
                    if q["tolerance"] > 0:
                        tol = _with_unit(f"{q['tolerance']:g}", unit)
                        ans += f"（允许误差 ±{tol}）"
                    out.append(f'<li><p>{prompt}</p>{code}<p><span class="ans">答案：{html.escape(ans)}</span>'
                               f'<span class="why">　{html.escape(q["why"])}</span></p></li>')
                    continue
                right = [j for j, o in enumerate(q["options"]) if o["correct"]]
                label = "、".join(letters[j] for j in right)
                items = "".join(f"<li>{letters[j]}. {html.escape(o['text'])}</li>" for j, o in enumerate(q["options"]))
                whys = "".join(f'<p class="why">{letters[j]}：{html.escape(q["options"][j]["why"])}</p>' for j in right)
                kind = "多选" if q["kind"] == "multi" else "单选"
                out.append(f'<li><p>（{kind}）{prompt}</p>{code}<ol style="list-style:none">{items}</ol>'
                           f'<p class="ans">答案：{label}</p>{whys}</li>')
        out.append("</ol></section>")
    out.append("</section>")
    return "\n".join(out)


def assemble(site: pathlib.Path, chapters: set[int] | None = None, numbers: dict | None = None):
    """拼出打印页的 HTML；numbers 是各章、各节开头的页码（第二遍排版时给）。返回 (HTML, 页面列表)。"""
    chosen = pages(chapters)
    keys = {p["file"]: p["key"] for p in chosen}
    head_tags, seen = [], set()
    states: dict = {}
    bodies, chapter_quizzes = [], []
    soups = []
    for page in chosen:
        soup = BeautifulSoup((site / (page["file"] + ".html")).read_text(encoding="utf-8"), "html.parser")
        for tag in soup.select(f'script[type="{STATE}"]'):
            states.update(json.loads(tag.string or "{}").get("state", {}))
        soups.append((page, soup))
    for page, soup in soups:
        for tag in soup.head.find_all(["link", "script", "style"]):
            if tag.name == "script" and tag.get("type") == STATE:
                continue
            if tag.name == "link" and tag.get("rel") not in (["stylesheet"],):
                continue
            # 脚本只要公式（MathJax 与它的配置）；主题的脚本管侧栏、页眉，打印页里没有那些东西
            if tag.name == "script" and "MathJax" not in (tag.string or "") and "mathjax" not in tag.get("src", ""):
                continue
            for attr in ("src", "href"):
                if tag.get(attr) and _is_local(tag[attr]):
                    tag[attr] = _resolve(page["file"], tag[attr])
            text = str(tag)
            if text not in seen:
                seen.add(text)
                head_tags.append(text)
        article = soup.select_one("article.bd-article")
        if article is None:
            raise SystemExit(f"{page['file']}.html 里找不到正文（article.bd-article）：网站是用 make book 构建的吗？")
        chapter_quizzes.append((page, _rewrite(article, page, keys, states)))
        h1 = article.find("h1")
        page["title"] = _heading_text(h1) if h1 else page["file"]
        page["sections"] = []
        for h2 in article.find_all("h2"):
            section = h2.find_parent("section")
            if section is not None and section.get("id"):
                page["sections"].append({"id": section["id"], "title": _heading_text(h2),
                                         "html": h2.decode_contents()})
        bodies.append((page, article.decode_contents()))

    state_json = json.dumps({"version_major": 2, "version_minor": 0, "state": states}, ensure_ascii=False)
    numbers = numbers or {}

    def entry(target, label, cls):
        # 第一遍排版时页码还不知道，先占上同样宽的位置（三位数），第二遍填进真正的页码，版面不变
        number = numbers.get(target, "000")
        hidden = "" if target in numbers else ' style="visibility:hidden"'
        return (f'<li class="{cls}"><a href="#{target}"><span class="t">{label}</span>'
                f'<span class="dots"></span><span class="pg"{hidden}>{number}</span></a></li>')

    toc_items, last_part = [], None
    for page, _ in bodies:
        if page["part"] and page["part"] != last_part:
            toc_items.append(f'<li class="part">{html.escape(page["part"])}</li>')
            last_part = page["part"]
        toc_items.append(entry(page["key"], html.escape(page["title"]), "chapter"))
        toc_items.extend(entry(sec["id"], sec["html"], "section") for sec in page["sections"])
    if any(q for _, q in chapter_quizzes):
        toc_items.append(entry("answers", "自测答案", "chapter"))
    sections = "\n".join(f'<section class="tfc-print-chapter" id="{p["key"]}">{body}</section>' for p, body in bodies)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8")) or {}
    repo = str((config.get("repository") or {}).get("url") or "")
    url = site_url()
    cover = ('<div class="tfc-print-cover"><p class="title">从零构建 Transformer</p>'
             '<p class="subtitle">注意力 · 自注意力 · 多头 · 位置编码 · 编解码架构 · BERT · GPT · 微调</p>'
             f'<p>{html.escape(str(config.get("author") or ""))}</p>'
             + (f'<p>网站：{html.escape(url)}</p>' if url else "")
             + (f'<p>源代码与笔记本：{html.escape(repo)}</p>' if repo else "")
             + '<p class="note">这本 PDF 由本书网站排印而成：每个数字、每张图都是构建时代码真正算出来的。'
             '小部件印的是它打开时的样子，拖动、点击要到网站上；编程练习的参考答案不收进 PDF'
             '（在网站和笔记本里点开就能看到），思考题的答案照印；各章的自测答案在书末。</p></div>')
    contents = f'<nav class="tfc-print-toc" id="contents"><h1>目录</h1><ol>{"".join(toc_items)}</ol></nav>'
    return ("<!DOCTYPE html>\n"
            '<html lang="zh-CN" data-theme="light" data-mode="light"><head><meta charset="utf-8">'
            "<title>从零构建 Transformer</title>\n" + "\n".join(head_tags)
            + f'\n<script type="{STATE}">{state_json}</script>\n'
            + '<script src="/_static/tfcourse/widgets-static.js"></script>\n'
            + f"<style>{PRINT_CSS}</style></head>\n"
            + '<body data-default-mode="light"><main class="bd-main"><div class="bd-content">'
            + '<div class="bd-article-container"><article class="bd-article">'
            + cover + contents + sections + answers_html(chapter_quizzes)
            + "</article></div></div></main></body></html>\n"), chosen


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(site: pathlib.Path):
    handler = functools.partial(_Quiet, directory=str(site))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# 打印前查一遍版面（打印用的是同样宽度的版面）：Chromium 遇到比纸宽的东西会把整页等比缩小，
# 在 overflow 不是 visible 的框里则会把多出的部分裁掉——两种都要在这里抓出来。
LAYOUT_AUDIT = """() => {
  const W = document.documentElement.clientWidth;
  const name = (el) => el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
      ? "." + String(el.className).trim().split(/\\s+/).slice(0, 2).join(".") : "")
      + " in " + ((el.closest("section.tfc-print-chapter") || {}).id || "?")
      + ": " + (el.textContent || "").trim().slice(0, 60);
  const wide = [], clipped = [];
  if (document.documentElement.scrollWidth > W + 1) wide.push("document " + document.documentElement.scrollWidth);
  for (const el of document.querySelectorAll("article *")) {
    if (el.closest("mjx-assistive-mml")) continue;          // 给读屏软件的隐藏副本，不画出来
    for (const r of el.getClientRects()) {                // 跨行的行内元素逐段看
      if (r.width && r.height && (r.right > W + 1 || r.left < -1)) {
        wide.push(name(el) + " [" + Math.round(r.left) + ", " + Math.round(r.right) + "]");
        break;
      }
    }
    const cs = getComputedStyle(el);
    if (cs.display !== "inline" && cs.overflowX !== "visible" && el.clientWidth > 0
        && el.scrollWidth > el.clientWidth + 1) clipped.push(name(el) + " +" + (el.scrollWidth - el.clientWidth) + "px");
  }
  return { width: W, wide, clipped };
}"""


class _Printer:
    """一个 Chromium 会话：在本机起一个只服务网站目录的 HTTP 服务，打印页由请求拦截直接给出。"""

    def __init__(self, site: pathlib.Path, chromium: str = CHROMIUM, browser=None):
        self.server = _serve(site)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.outside, self.errors, self.layout, self.rendered = [], [], {}, ""
        self._pw = None
        self.browser = browser                         # 测试传进它们共用的浏览器
        if browser is None:
            from playwright.sync_api import sync_playwright

            if not pathlib.Path(chromium).exists():
                self.server.shutdown()
                raise SystemExit(f"找不到 Chromium（{chromium}）：请先运行 tools/system-deps.sh browser。")
            self._pw = sync_playwright().start()
            self.browser = self._pw.chromium.launch(executable_path=chromium, args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"])

    def close(self):
        if self._pw is not None:
            self.browser.close()
            self._pw.stop()
        self.server.shutdown()

    def print(self, document: str) -> bytes:
        """打开打印页（拦下一切发往本机以外的请求），等小部件、公式、字体、图都就绪后打印成 A4。"""
        page = self.browser.new_page(viewport={"width": WIDTH_PX, "height": 1000}, color_scheme="light")

        def route(r):
            url = r.request.url
            if url == self.base + PRINT_PATH:
                r.fulfill(status=200, content_type="text/html; charset=utf-8", body=document)
            elif url.startswith((self.base, "data:", "blob:")):
                r.continue_()
            else:
                self.outside.append(url)
                r.abort()

        page.route("**/*", route)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.goto(self.base + PRINT_PATH, wait_until="load", timeout=180_000)
        page.wait_for_function("document.documentElement.dataset.tfcWidgets === 'ready'", timeout=180_000)
        page.evaluate("""async () => {
            if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
            await document.fonts.ready;
            await Promise.all([...document.images].map(i => i.complete ? null :
                new Promise(r => { i.onload = i.onerror = r; })));
        }""")
        page.emulate_media(media="print")
        page.wait_for_timeout(300)
        self.layout = page.evaluate(LAYOUT_AUDIT)
        self.rendered = page.evaluate("document.body.innerText")      # 连同小部件画出的字（测试查缺字）
        pdf = page.pdf(format="A4", print_background=True, outline=False, tagged=True,
                       display_header_footer=True, header_template=HEADER, footer_template=FOOTER,
                       margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
        page.close()
        return pdf


def destinations(reader) -> dict[str, tuple[int, float]]:
    """PDF 里的命名目标（Chromium 给每个被链接指向的 id 生成一个）→ (所在页（从 1 数）, 页内的高度)。"""
    out = {}
    for name, dest in reader.named_destinations.items():
        out[name.lstrip("/")] = (reader.get_destination_page_number(dest) + 1, float(dest.get("/Top") or 0))
    return out


def add_outline(reader, chosen: list[dict], dests: dict[str, tuple[int, float]]):
    """书签：篇 → 章 → 节，外加目录与书末的自测答案（按章）；点书签落在标题处；打开 PDF 时显示书签栏。"""
    from pypdf import PdfWriter
    from pypdf.generic import Fit, NameObject, TextStringObject

    writer = PdfWriter(clone_from=reader)
    if "/Outlines" in writer.root_object:
        del writer.root_object["/Outlines"]

    def add(title, key, parent=None, bold=False):
        page, top = dests[key]
        return writer.add_outline_item(title=title, page_number=page - 1, parent=parent, bold=bold,
                                       fit=Fit.xyz(left=0, top=top))

    writer.add_outline_item(title="目录", page_number=1)          # 封面之后的那一页
    part_item, last_part = None, None
    for p in chosen:
        parent = None
        if p["part"]:
            if p["part"] != last_part:
                part_item = add(p["part"], p["key"], bold=True)
                last_part = p["part"]
            parent = part_item
        chapter = add(p["title"], p["key"], parent)
        for sec in p["sections"]:
            if sec["id"] in dests:
                add(sec["title"], sec["id"], chapter)
    if "answers" in dests:
        answers = add("自测答案", "answers", bold=True)
        for p in chosen:
            if f"answers-{p['key']}" in dests:
                add(p["title"], f"answers-{p['key']}", answers)
    writer.page_mode = "/UseOutlines"
    writer.add_metadata({"/Title": "从零构建 Transformer", "/Author": "《从零构建 Transformer》课程组",
                         "/Subject": "用代码从零构建 Transformer：注意力、BERT、GPT 与微调"})
    writer.root_object[NameObject("/Lang")] = TextStringObject("zh-CN")
    return writer


def build(site: pathlib.Path = SITE, out: pathlib.Path = OUT, chapters: set[int] | None = None,
          browser=None) -> dict:
    """排两遍：第一遍量出各章、各节从第几页开始，第二遍把页码填进目录（版面不变，核对一遍）。"""
    import io
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)   # Chromium 的 PDF 尾部对象数少记两个：无害的警告

    if not (site / "index.html").exists():
        raise SystemExit(f"{site} 里还没有网站：请先运行 make book。")
    t0 = time.perf_counter()
    printer = _Printer(site, browser=browser)
    try:
        document, chosen = assemble(site, chapters)
        reader = PdfReader(io.BytesIO(printer.print(document)))
        dests = destinations(reader)
        for attempt in range(3):
            numbers = {k: page for k, (page, _) in dests.items()}
            document, chosen = assemble(site, chapters, numbers)
            reader = PdfReader(io.BytesIO(printer.print(document)))
            again = destinations(reader)
            if {k: page for k, (page, _) in again.items()} == numbers:
                dests = again
                break
            dests = again
        else:
            raise SystemExit("目录里的页码排了三遍还没有稳定下来。")
    finally:
        printer.close()
    writer = add_outline(reader, chosen, dests)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        writer.write(f)
    return {"outside": printer.outside, "errors": printer.errors, "layout": printer.layout,
            "rendered": printer.rendered, "pages": len(reader.pages),
            "seconds": time.perf_counter() - t0, "bytes": out.stat().st_size,
            "document": document, "chosen": chosen, "numbers": numbers}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=pathlib.Path, default=SITE)
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--chapters", type=int, nargs="*", help="只排这几章（连同前言），默认全部")
    args = ap.parse_args(argv)
    report = build(args.site, args.out, set(args.chapters) if args.chapters else None)
    if report["outside"]:
        print("警告：打印页想访问本机以外的地址（已拦下）：", *sorted(set(report["outside"]))[:5], sep="\n  ")
    if report["layout"].get("wide") or report["layout"].get("clipped"):
        print("警告：有内容比纸宽或在框里被裁掉：", *(report["layout"]["wide"] + report["layout"]["clipped"])[:8],
              sep="\n  ")
    if report["errors"]:
        print("打印页的脚本报错：", *report["errors"][:5], sep="\n  ", file=sys.stderr)
        return 1
    print(f"PDF 已生成：{args.out}（{report['pages']} 页，{report['bytes'] / 1e6:.1f} MB，"
          f"用时 {report['seconds']:.0f} 秒）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
