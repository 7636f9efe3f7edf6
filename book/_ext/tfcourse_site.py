"""本书网站的 Sphinx 小扩展：网站外壳（页眉、侧栏、页脚、搜索）的中文化、减重与修补。

- 去掉用不到、还会引用外部 CDN 的 Thebe 脚本。Jupyter Book 1 总是加载 sphinx-thebe；它在每页注入两次
  `const THEBE_JS_URL = "…外部地址…"`（第二次在浏览器里报错），而本书不用 Thebe（读者用 Binder/Colab 运行代码）。
- 去掉主题的 fontawesome.js（1.5 MB）：页眉用到的几个图标由 `_static/tfcourse/site.css` 用内联 SVG 画出，
  图标字体也就不再下载。
- MathJax 只加载在有公式的页面上（myst-nb 把资源策略设成了 always，Sphinx 因此在每页都加载它）。
- 加载本站的 `_static/tfcourse/site.css` 与 `site.js`（窄屏不横向滚动、暗色输出区、侧栏按钮）。
- 模板覆盖（`templates/`）：主题里写死的英文按钮提示换成中文；代码单元折叠提示换成中文。
- 整本书的 PDF（make pdf 写到 `_build/pdf/`）：有它时复制进网站，页眉的下载菜单里多一项「整本书 PDF」；
  没有时网页上也不出现这一项（不留一个打不开的链接）。
- 课程模型的浏览器运行时（`_static/tfcourse/runtime.js`，ES 模块）加载到每一页：`window.tfcourse.models.load(name)`；
  它的源码（`tfcourse/widgets/static/runtime.js`，笔记本里的小部件用的也是它）和它要的权重（safetensors，float16）
  在构建结束时由 `tfcourse.webmodels.write_site` 写进 `_static/tfcourse/`，权重在读者第一次用到时才下载。
- 中文搜索：Sphinx 的中文分词要靠 jieba，没装时会悄悄丢掉所有中文词。这里给 jieba 一个本书术语词典，
  构建结束时检查搜索索引里确实有中文词，没有就让构建失败。
"""
from __future__ import annotations

import json
import pathlib
import re

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = pathlib.Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
SEARCH_DICT = HERE / "search-dict.txt"
CJK = re.compile(r"[\u4e00-\u9fff]")

PDF_NAME = "transformer-from-scratch.pdf"


def pdf_source(srcdir) -> pathlib.Path:
    """make pdf 写出的整本书 PDF。"""
    return pathlib.Path(srcdir) / "_build" / "pdf" / PDF_NAME


# myst-nb 的折叠提示是 "…{type}…"，{type} 会被填成下面这些英文词
_PROMPT_TYPES = {"source": "代码", "output": "输出", "outputs": "输出", "content": "内容"}


def _configure(app, config):
    config.templates_path.insert(0, str(TEMPLATES))
    # PDF 出现（或换了一份）时这个值跟着变，Sphinx 因此重写全部网页（不重新执行笔记本），下载菜单随之更新
    pdf = pdf_source(app.srcdir)
    config.tfcourse_pdf = f"{pdf.stat().st_size}-{int(pdf.stat().st_mtime)}" if pdf.exists() else ""
    options = dict(config.html_search_options or {})
    options.setdefault("dict", str(SEARCH_DICT))
    config.html_search_options = options


def _drop_thebe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        kept = []
        for js in scripts:
            name = str(getattr(js, "filename", js) or "")
            body = str(getattr(js, "attributes", {}).get("body", "")) if hasattr(js, "attributes") else ""
            if "thebe" in name.lower() or "THEBE_JS_URL" in body:
                continue
            kept.append(js)
        context["script_files"] = kept
    css = context.get("css_files")
    if css:
        context["css_files"] = [c for c in css if "thebe" not in str(getattr(c, "filename", c)).lower()]


def pdf_button(context) -> bool:
    """在页眉的下载菜单里加「整本书 PDF」；返回是否加上了。"""
    for group in context.get("header_buttons") or []:
        if group.get("label") == "download-buttons":
            group["buttons"].append({
                "type": "link", "url": context["pathto"](PDF_NAME, 1), "text": "整本书 PDF",
                "tooltip": "下载整本书的 PDF", "icon": "fas fa-file-pdf", "label": "download-book-pdf-button"})
            return True
    return False


def _pdf_in_header(app, pagename, templatename, context, doctree):
    if app.config.tfcourse_pdf:
        pdf_button(context)


def _copy_pdf(app, exception):
    pdf = pdf_source(app.srcdir)
    if exception is None and app.builder.name in ("html", "dirhtml") and pdf.exists():
        import shutil
        shutil.copyfile(pdf, pathlib.Path(app.outdir) / PDF_NAME)


def _write_models(app, exception):
    if exception is None and app.builder.name in ("html", "dirhtml"):
        from tfcourse import webmodels
        webmodels.write_site(pathlib.Path(app.outdir) / "_static" / "tfcourse")   # runtime.js 与 models/


def _page_has_math(app, pagename, doctree) -> bool:
    # 不用 MathDomain.has_equations(pagename)：它把目录里收录的子页面也算进来，序言因此总被当成"有公式"
    if app.env.get_domain("math").data.get("has_equations", {}).get(pagename):
        return True
    return doctree is not None and any(True for _ in doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block))))


def _mathjax_only_with_math(app, pagename, templatename, context, doctree):
    """没有公式的页面不加载 MathJax（连同它的配置脚本）。"""
    scripts = context.get("script_files")
    if not scripts or _page_has_math(app, pagename, doctree):
        return
    mathjax = str(app.config.mathjax_path or "")

    def is_mathjax(js):
        name = str(getattr(js, "filename", js) or "")
        body = str(getattr(js, "attributes", {}).get("body", "")) if hasattr(js, "attributes") else ""
        # Sphinx 把本站的脚本路径写成 "_static/<mathjax_path>"
        return (mathjax and name.split("?")[0].endswith(mathjax)) or body.startswith(("window.MathJax", "MathJax.Hub.Config"))

    context["script_files"] = [js for js in scripts if not is_mathjax(js)]


_FONTAWESOME = re.compile(r'\s*<script[^>]*fontawesome\.js[^>]*></script>')


def _no_fontawesome(html):
    from markupsafe import Markup
    return Markup(_FONTAWESOME.sub("", str(html)))


def _template_filters(app):
    templates = getattr(app.builder, "templates", None)
    if templates is not None and hasattr(templates, "environment"):
        templates.environment.filters["tfc_no_fontawesome"] = _no_fontawesome


class ChinesePrompts(SphinxPostTransform):
    """把代码单元折叠按钮上的 "显示{type}" 里由 myst-nb 填进的英文词换成中文（在 myst-nb 的 HideInputCells 之后运行）。"""

    default_priority = 210
    formats = ("html",)

    def run(self, **kwargs):
        for node in self.document.findall(nodes.Element):
            if type(node).__name__ != "HideCodeCellNode":
                continue
            for key in ("prompt_show", "prompt_hide"):
                text = node.get(key, "")
                for en, zh in _PROMPT_TYPES.items():
                    if text.endswith(en) and CJK.search(text):
                        node[key] = text[: -len(en)] + zh
                        break


def _visit_hidden_cell(self, node):
    from html import escape
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="hide {classes}">\n')
    # 不写 aria-label：读屏软件读出的名字就是看得见的那一行（显示代码 / 隐藏代码），
    # 与屏幕上的字一致（WCAG 2.5.3「名字里含看得见的标签」）。
    self.body.append('<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def _translate_hidden_cells(app):
    """myst-nb 把折叠按钮的 aria-label 写死成英文 "Toggle hidden content"：去掉它，按钮的名字就是它显示的中文。"""
    try:
        from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
    except ImportError:          # myst-nb 改了内部结构：保留原样，不让构建失败
        return
    app.add_node(HideCodeCellNode, override=True, html=(_visit_hidden_cell, depart_HideCellInput))


def search_index_terms(outdir: pathlib.Path) -> dict:
    """读出 searchindex.js 里的词表。"""
    text = (pathlib.Path(outdir) / "searchindex.js").read_text(encoding="utf-8")
    payload = text[text.index("(") + 1: text.rindex(")")]
    return json.loads(payload)["terms"]


def _check_search_index(app, exception):
    if exception is not None or app.builder.name not in ("html", "dirhtml"):
        return
    path = pathlib.Path(app.outdir) / "searchindex.js"
    if not path.exists():
        return
    terms = search_index_terms(app.outdir)
    chinese = [t for t in terms if CJK.search(t)]
    if not chinese:
        raise ExtensionError(
            f"搜索索引（{len(terms)} 个词）里一个中文词也没有：Sphinx 的中文分词需要 jieba，"
            "请确认它已安装（requirements.txt）且 language 是 zh_CN。")


def setup(app):
    app.add_config_value("tfcourse_pdf", "", "html")
    app.connect("config-inited", _configure)
    app.connect("builder-inited", _template_filters)
    app.connect("builder-inited", _translate_hidden_cells)
    app.connect("html-page-context", _drop_thebe)
    app.connect("html-page-context", _mathjax_only_with_math, priority=900)
    app.connect("html-page-context", _pdf_in_header, priority=950)     # 在主题加好下载菜单（501）之后
    app.connect("build-finished", _check_search_index)
    app.connect("build-finished", _copy_pdf)
    app.connect("build-finished", _write_models)
    app.add_post_transform(ChinesePrompts)
    app.add_css_file("tfcourse/site.css")
    app.add_js_file("tfcourse/site.js", defer="defer")
    app.add_js_file("tfcourse/runtime.js", type="module")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
