"""本书网站的 Sphinx 小扩展：去掉用不到、还会引用外部 CDN 的 Thebe 脚本。

Jupyter Book 1 总是加载 sphinx-thebe；它在每页注入两次 `const THEBE_JS_URL = "…外部地址…"`
（第二次在浏览器里报错），而本书不用 Thebe（读者用 Binder/Colab 运行代码）。
"""
from __future__ import annotations


def _drop_thebe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
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


def setup(app):
    app.connect("html-page-context", _drop_thebe)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
