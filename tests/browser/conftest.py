"""浏览器测试：在无头 Chromium 里打开构建好的网站，拦下一切发往本机以外的请求。"""
from __future__ import annotations

import functools
import http.server
import os
import pathlib
import socketserver
import threading
import time
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = pathlib.Path(os.environ.get("TFCOURSE_SITE", ROOT / "_build" / "html"))
CHROMIUM = os.environ.get("TFCOURSE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def pytest_collection_modifyitems(items):
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


def js_fixed(x: float, digits: int) -> str:
    """与 JavaScript 的 Number.prototype.toFixed 相同的格式：按二进制浮点数的精确值四舍五入，恰好一半时进位。
    （Python 的 f"{x:.1f}" 遇到恰好一半时取偶数，3.25 → "3.2"，而 toFixed 给 "3.3"。）"""
    from decimal import ROUND_HALF_UP, Decimal
    q = Decimal(1).scaleb(-digits)
    return str(Decimal(x).quantize(q, rounding=ROUND_HALF_UP))


def chapter_pages() -> list[str]:
    """目录里每一章的网页路径（按目录顺序）。"""
    import yaml
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [c["file"] + ".html" for part in toc["parts"] for c in part["chapters"] if "/ch" in c["file"]]


def chapter_page(n: int) -> str:
    """第 n 章的网页路径。"""
    import re
    return next(p for p in chapter_pages() if re.search(rf"/ch{n:02d}-", p))


def row_weights(heat, row: int) -> list[float]:
    """点热力图第 row 行的行首，读出条形图里这一行的全部权重（被掩码挡住的写作 "0.000 ×"）。"""
    heat.locator(f'th.tfc-rowhead[data-row="{row}"]').click()
    return [float(t.split()[0]) for t in heat.locator(".tfc-bar-value").all_inner_texts()]


# 浏览器测试共用的颜色计算（JavaScript）：parse 读 rgb()/rgba()，over 叠加半透明颜色，lum 是 WCAG 相对亮度，
# background 把元素和它的祖先的背景色一层层叠起来，得到真正显示的背景。
COLOUR_JS = """  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => top.slice(0, 3).map((v, i) => v * top[3] + under[i] * (1 - top[3]));
  const lum = (rgb) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    const [r, g, b] = rgb.map(f); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const background = (el) => { const layers = [];
    for (let n = el; n; n = n.parentElement) { const c = parse(getComputedStyle(n).backgroundColor); if (c && c[3] > 0) layers.push(c); }
    let rgb = [255, 255, 255]; for (const c of layers.reverse()) rgb = over(c, rgb); return rgb; };
"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_dir():
    return SITE


@pytest.fixture(scope="session")
def site_url():
    if not (SITE / "index.html").exists():
        pytest.fail(f"没有找到构建好的网站 {SITE}：先运行 make book。")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(f"没有找到 Chromium（{CHROMIUM}）：apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Visit:
    """一次页面访问：页面对象，以及访问中记录下来的问题。"""

    page: object
    outside: list = field(default_factory=list)        # 被拦下的外部请求
    failed: list = field(default_factory=list)         # 本站返回 4xx/5xx 的请求
    errors: list = field(default_factory=list)         # 控制台错误与未捕获的异常
    requests: object = None                            # Requests：进行中的请求

    def assert_clean(self):
        assert self.outside == [], f"页面试图访问站外地址：{self.outside}"
        assert self.failed == [], f"本站资源加载失败：{self.failed}"
        assert self.errors == [], f"控制台报错：{self.errors}"


class Requests:
    """页面发出、还没有结束的请求（本站的与被拦下的都算）。Playwright 自己的 networkidle 在两个核都很忙时
    偶尔永远等不到（它的说明也劝人别在测试里用它），所以这里自己数：请求发出记一笔，结束或失败划掉。"""

    def __init__(self, page):
        self.pending: dict = {}
        self.last = time.monotonic()
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _start(self, r):
        self.pending[id(r)] = r.url
        self.last = time.monotonic()

    def _end(self, r):
        self.pending.pop(id(r), None)
        self.last = time.monotonic()


READY_JS = """async () => {
  await document.fonts.ready;
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await Promise.all([...document.images].filter((i) => i.loading !== 'lazy' && !i.complete)
    .map((i) => new Promise((done) => { i.addEventListener('load', done); i.addEventListener('error', done); })));
}"""


DONE_JS = """(urls) => urls.filter((u) => performance.getEntriesByName(u).some((e) => e.responseEnd > 0))"""


def settle(page, requests: Requests, quiet: float = 0.5, timeout: float = 180.0):
    """等页面真正加载完：字体、公式、图片都好了，并且连续 quiet 秒没有进行中的请求。
    超时报出还在等的请求，而不是一句笼统的超时。"""
    page.evaluate(READY_JS)
    deadline = time.monotonic() + timeout
    while True:
        now = time.monotonic()
        if not requests.pending and now - requests.last >= quiet:
            return
        if requests.pending and now - requests.last > 5:
            # 5 秒没有动静：页面自己的计时记录里已经收完的请求划掉（万一漏掉了"结束"事件）
            done = set(page.evaluate(DONE_JS, sorted(set(requests.pending.values()))))
            for key, url in list(requests.pending.items()):
                if url in done:
                    requests.pending.pop(key, None)
        if now > deadline:
            raise TimeoutError(f"{timeout:.0f} 秒后仍有请求没有结束：{sorted(set(requests.pending.values()))}")
        page.wait_for_timeout(100)


def open_page(browser, site_url: str, path: str, color_scheme: str = "light", wait_for: str | None = None,
              width: int = 1280, height: int = 900, on_response=None, idle: bool = True):
    """在新的浏览器上下文里打开站内页面，拦下站外请求 -> (上下文, Visit)；上下文由调用者关闭。"""
    ctx = browser.new_context(color_scheme=color_scheme, viewport={"width": width, "height": height},
                              has_touch=width < 1000, is_mobile=width < 600)
    ctx.set_default_timeout(180_000)         # 共享的 2 核机器上，大页面加载可能远超默认的 30 秒
    page = ctx.new_page()
    v = Visit(page)

    def route(r):
        url = r.request.url
        if url.startswith(site_url + "/") or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            v.outside.append(url)
            r.abort()

    page.route("**/*", route)
    requests = Requests(page)
    page.on("console", lambda m: m.type == "error" and v.errors.append(m.text))
    page.on("pageerror", lambda e: v.errors.append(str(e)))
    page.on("response", lambda r: r.status >= 400 and v.failed.append((r.status, r.url)))
    if on_response is not None:
        page.on("response", on_response)
    page.goto(f"{site_url}/{path}", wait_until="load")
    if wait_for:
        page.wait_for_selector(wait_for, timeout=120_000)
    if idle:
        settle(page, requests)
    v.requests = requests
    return ctx, v


@pytest.fixture
def visit(browser, site_url):
    """visit(path, color_scheme="light", wait_for=None, width=1280, height=900) -> Visit：打开站内页面，等小部件渲染完。"""
    contexts = []

    def _open(path: str, **kw) -> Visit:
        ctx, v = open_page(browser, site_url, path, **kw)
        contexts.append(ctx)
        return v

    yield _open
    for ctx in contexts:
        ctx.close()


def site_pages(site) -> list[str]:
    """网站里每一个网页（不含 _static、_sources 等目录里的文件）。"""
    skip = ("_static", "_sources", "_images", "jupyter_execute")
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not any(part in skip for part in p.relative_to(site).parts)
    )


# 巡视时读出的界面文字：正文的可见文字，以及按钮与图片的 aria-label / title / alt / placeholder。
UI_TEXT_JS = """() => {
  const attrs = [];
  for (const el of document.querySelectorAll('[aria-label], [title], [alt], [placeholder]'))
    for (const a of ['aria-label', 'title', 'alt', 'placeholder']) if (el.getAttribute(a)) attrs.push(el.getAttribute(a));
  return {text: document.body.innerText, attrs}; }"""


@dataclass
class PageRecord:
    """巡视中一个网页留下的记录：访问中的问题、加载的每个文件的大小、界面文字。"""

    path: str
    landed: str                    # 加载完时所在的页面（跳转页与 path 不同）
    outside: list                  # 被拦下的外部请求
    failed: list                   # 本站返回 4xx/5xx 的请求
    errors: list                   # 控制台错误与未捕获的异常
    raw: int | None                # 加载的全部文件的原始字节数（跳转页为 None）
    packed: int | None             # 同上，gzip（级别 6）之后
    by_file: dict | None           # 文件名 -> gzip 后的字节数
    widgets: bool                  # 页面上有没有渲染出来的小部件
    text: str                      # 展开前三个折叠的单元之后，正文的可见文字
    attrs: list                    # 同时读出的 aria-label / title / alt / placeholder

    def problems(self) -> list[str]:
        out = []
        if self.outside:
            out.append(f"页面试图访问站外地址：{self.outside}")
        if self.failed:
            out.append(f"本站资源加载失败：{self.failed}")
        if self.errors:
            out.append(f"控制台报错：{self.errors}")
        return out


def _weigh(responses) -> tuple[int, int, dict]:
    """本站成功返回的每个文件：原始字节数之和、gzip（级别 6）后之和、文件名 -> gzip 后的字节数。"""
    import gzip

    raw = packed = 0
    by_file = {}
    for r in responses:
        if not r.url.startswith("http") or r.status >= 300:
            continue
        body = r.body()
        size = len(gzip.compress(body, compresslevel=6))
        raw += len(body)
        packed += size
        by_file[r.url.rsplit("/", 1)[-1].split("?")[0]] = size
    return raw, packed, by_file


def _tour_one(browser, site_url: str, path: str) -> PageRecord:
    responses = []
    ctx, v = open_page(browser, site_url, path, on_response=lambda r: responses.append(r), idle=False)
    try:
        page = v.page
        if page.locator("script[type='application/vnd.jupyter.widget-state+json']").count():
            page.wait_for_selector(".tfc-widget", timeout=120_000)
        page.mouse.wheel(0, 20_000)                               # 让懒加载的东西也加载出来
        settle(page, v.requests, quiet=2.0)                      # 连续 2 秒没有进行中的请求才算加载完
        landed = page.url.removeprefix(site_url + "/")
        # 跳转页（index.html）加载完时已离开了自己，浏览器丢掉了它的响应：不称重（None）
        raw, packed, by_file = _weigh(responses) if landed == path else (None, None, None)
        widgets = page.locator(".tfc-widget").count() > 0
        outside, failed, errors = list(v.outside), list(v.failed), list(v.errors)
        for summary in page.locator("details.hide > summary").all()[:3]:
            summary.click()                                       # 展开后的提示也要是中文
        got = page.evaluate(UI_TEXT_JS)
    finally:
        ctx.close()
    return PageRecord(path, landed, outside, failed, errors, raw, packed, by_file, widgets, got["text"], got["attrs"])


@pytest.fixture(scope="session")
def site_tour(browser, site_url, site_dir) -> dict[str, PageRecord]:
    """把网站的每一个网页在桌面宽度、浅色主题下打开一次（站外请求全部拦下），记下逐页检查所需的一切：
    站外请求、失败的请求、控制台错误、加载的文件与大小、界面文字。逐页的测试（自包含、中文界面、页面重量）
    各自对这份记录断言，失败时各报各的名字；页面只加载一次。"""
    return {path: _tour_one(browser, site_url, path) for path in site_pages(site_dir)}
