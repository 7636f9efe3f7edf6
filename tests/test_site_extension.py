"""网站扩展 book/_ext/tfcourse_site.py 的 PDF 下载项：有 PDF 时加进页眉的下载菜单，没有时什么也不加。"""
import pathlib
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import tfcourse_site  # noqa: E402


def _context():
    return {"pathto": lambda name, resource=0: "../../" + name,
            "header_buttons": [{"label": "launch-buttons", "buttons": []},
                               {"label": "download-buttons", "buttons": [{"label": "download-source-button"}]}]}


def test_pdf_item_joins_the_download_menu():
    ctx = _context()
    assert tfcourse_site.pdf_button(ctx)
    items = ctx["header_buttons"][1]["buttons"]
    assert [b["label"] for b in items] == ["download-source-button", "download-book-pdf-button"]
    assert items[-1]["url"] == "../../" + tfcourse_site.PDF_NAME and items[-1]["type"] == "link"
    assert ctx["header_buttons"][0]["buttons"] == []


def test_no_pdf_no_link(tmp_path):
    app = types.SimpleNamespace(srcdir=str(tmp_path), config=types.SimpleNamespace(tfcourse_pdf=""))
    config = types.SimpleNamespace(templates_path=[], html_search_options={})
    tfcourse_site._configure(app, config)
    assert config.tfcourse_pdf == ""
    app.config = config
    ctx = _context()
    tfcourse_site._pdf_in_header(app, "x", "page.html", ctx, None)
    assert len(ctx["header_buttons"][1]["buttons"]) == 1
    # make pdf 写出 PDF 之后，配置值跟着变（Sphinx 因此重写全部网页），菜单里多出一项
    pdf = tfcourse_site.pdf_source(tmp_path)
    pdf.parent.mkdir(parents=True)
    pdf.write_bytes(b"%PDF-1.4\n")
    tfcourse_site._configure(app, config)
    assert config.tfcourse_pdf.startswith("9-")
    tfcourse_site._pdf_in_header(app, "x", "page.html", ctx, None)
    assert ctx["header_buttons"][1]["buttons"][-1]["label"] == "download-book-pdf-button"
