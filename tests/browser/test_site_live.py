"""读者自己的文字交给课程的模型（第 14 章的 ReviewAttention）：网站上在浏览器里重算、与 torch 一致；
笔记本里（没有网站）向 Python 要运行时和权重的那条路也走一遍。在手机宽度（390 px）、浅色与深色主题下。"""
from __future__ import annotations

import base64
import json

import pytest

from conftest import chapter_page, open_page

PHONE = {"width": 390, "height": 844}


def _reference():
    from tfcourse import webmodels

    clf, vocab = webmodels.reference_model("cls-bert")
    return clf, vocab


def _fits_a_phone_and_reads(page, widget, selectors, scheme):
    """手机上不撑破页面，输入框的字不小于 16 px（点进去不放大页面），selectors 指的文字对比度都够 4.5:1。"""
    from test_site import _CONTRAST_JS

    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert widget.locator("textarea").evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)") >= 16
    ratios = widget.evaluate(_CONTRAST_JS, selectors)
    low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
    assert low == {}, f"{scheme} 主题下对比度不足 4.5:1：{low}"


def _type(page, live, text):
    """把文本框改成 text（像读者打字一样触发 input），等概率与热力图换成这段文字的结果。"""
    before = live.locator("[data-testid=live-verdict]").inner_text()
    box = live.locator("textarea")
    box.fill(text)
    if text:
        page.wait_for_function("""([el, before]) => el.querySelector('[data-testid=live-verdict]').innerText !== before
            && /浏览器里读了/.test(el.querySelector('[data-testid=live-notes]').innerText)""",
                               arg=[live.element_handle(), before], timeout=60_000)
    else:
        page.wait_for_function("(el) => /先写一条评论/.test(el.innerText)", arg=live.element_handle(), timeout=10_000)


def _heatmap_tokens(page):
    heat = page.locator(".tfc-live + .tfc-heatmap")
    return heat, heat.locator("thead th[data-col]").all_inner_texts()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_review_typed_on_a_phone_is_read_by_cls_bert_in_the_browser(browser, site_url, scheme):
    clf, _ = _reference()
    fetched = []
    ctx, v = open_page(browser, site_url, chapter_page(14), color_scheme=scheme, wait_for=".tfc-live",
                       on_response=lambda r: fetched.append(r.url), **PHONE)
    try:
        page = v.page
        live = page.locator(".tfc-live")
        assert live.count() == 1
        live.scroll_into_view_if_needed()
        opening = live.locator("textarea").input_value()
        shown = float(live.locator("[data-testid=live-prob]").inner_text())
        assert abs(shown - clf.predict_proba([opening])[0]) < 1e-3         # 打开时的视图 = 这段文字的结果
        assert not any(".safetensors" in u for u in fetched)                # 改动之前什么权重都不下载
        heat, tokens = _heatmap_tokens(page)
        assert tokens == clf.attention(opening)["tokens"]

        for text in ("房间很干净，服务也好，下次还来", "太差了，再也不来了", "一般"):
            _type(page, live, text)
            p = float(live.locator("[data-testid=live-prob]").inner_text())
            assert abs(p - clf.predict_proba([text])[0]) < 1e-3, text
            assert ("判为好评" in live.locator("[data-testid=live-verdict]").inner_text()) == (p >= 0.5)
            heat, tokens = _heatmap_tokens(page)
            assert tokens == clf.attention(text)["tokens"]
            # "（平均）"一行的第一个键（[CLS]）的数字 = torch 各头平均、各行平均后的值
            att = clf.attention(text)["weights"]
            want = float(att.mean(0).mean(0)[0])
            cell = heat.locator('td[data-row="0"][data-col="0"]').get_attribute("aria-label")
            assert abs(float(cell.rsplit("：", 1)[1]) - want) < 1e-3, (text, cell, want)
        assert sum(".safetensors" in u for u in fetched) == 1               # 权重只下载一次
        assert any(u.endswith("/cls-bert.safetensors") for u in fetched)

        heat.locator("select").select_option(index=2)                      # 换到第 2 头：图跟着换
        _, tokens = _heatmap_tokens(page)
        assert tokens == clf.attention("一般")["tokens"]
        heat.locator('th.tfc-rowhead[data-row="1"]').click()
        assert "[CLS]" in heat.locator("[data-testid=selection]").inner_text()

        box = live.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 0.5   # 手机上不撑破页面
        _fits_a_phone_and_reads(page, live, [".tfc-live-label", "[data-testid=live-verdict]", ".tfc-note", "textarea"], scheme)
        v.assert_clean()
    finally:
        ctx.close()


def test_empty_long_and_unknown_text_get_a_visible_answer(browser, site_url):
    from tfcourse.widgets.live import input_notes

    clf, vocab = _reference()
    ctx, v = open_page(browser, site_url, chapter_page(14), wait_for=".tfc-live", **PHONE)
    try:
        page = v.page
        live = page.locator(".tfc-live")
        _type(page, live, "")
        assert "先写一条评论" in live.inner_text() and "还是上一条评论的" in live.inner_text()
        limit = clf.encoder.max_len - 2
        for text in ("好" * (limit + 5) + "差", "饕餮😀 still 好吃", "😀" * (limit + 1)):
            _type(page, live, text)
            notes = live.locator("[data-testid=live-notes]").inner_text()
            for note in input_notes(text, limit, lambda c: c in vocab.stoi):    # 与 Python 一侧的提示逐字相同
                assert note in notes, (text, note, notes)
            p = float(live.locator("[data-testid=live-prob]").inner_text())
            assert abs(p - clf.predict_proba([text])[0]) < 1e-3
        _, tokens = _heatmap_tokens(page)
        assert len(tokens) == clf.encoder.max_len and tokens[1] == "[UNK]"   # 截断到窗口，字表外的字是 [UNK]
        v.assert_clean()
    finally:
        ctx.close()


def test_in_a_notebook_the_widget_asks_python_for_the_runtime_and_the_weights(browser, site_url):
    """没有网站时（Jupyter、Colab、Binder）：小部件的前端模块发消息要模型，LiveModels 回的内容交给它，
    改动后的结果与 torch 相同。这里用一个最小的 anywidget model 代替内核，它转交的正是 Python 一侧回的内容。"""
    from tfcourse.widgets.live import ReviewAttention

    clf, _ = _reference()
    heat = ReviewAttention("还行")
    replies = []
    heat.send = lambda content, buffers=None: replies.append((content, buffers))
    heat._answer_model_request(heat, {"tfcourse_request": "model", "name": "cls-bert"}, [])
    (content, buffers), = replies
    state = {k: v for k, v in heat.get_state().items() if not k.startswith("_") or k == "_esm"}
    ctx = browser.new_context(viewport=PHONE)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(site_url) else r.abort())
    try:
        page.goto(f"{site_url}/search.html")
        page.evaluate("() => { delete window.tfcourse; }")                  # 不许借用网站的运行时
        got = page.evaluate("""async ([state, reply, weights, text]) => {
            const handlers = {}, sent = [];
            const model = {
              get: (k) => state[k], set: (k, v) => { state[k] = v; (handlers['change:' + k] || []).forEach((f) => f()); },
              on: (e, f) => { (handlers[e] = handlers[e] || []).push(f); },
              off: (e, f) => { handlers[e] = (handlers[e] || []).filter((g) => g !== f); },
              save_changes() {},
              send(msg) {                                          // 内核收到请求，回 LiveModels 给的内容
                sent.push(msg);
                const bytes = Uint8Array.from(atob(weights), (c) => c.charCodeAt(0));
                setTimeout(() => (handlers['msg:custom'] || []).slice().forEach((f) => f(reply, [new DataView(bytes.buffer)])), 0);
              },
            };
            const url = URL.createObjectURL(new Blob([state._esm], { type: 'text/javascript' }));
            const mod = await import(url);
            const el = document.createElement('div');
            document.body.append(el);
            mod.default.render({ model, el });
            const box = el.querySelector('textarea');
            box.value = text;
            box.dispatchEvent(new Event('input'));
            for (let i = 0; i < 200 && !/浏览器里读了/.test(el.innerText); i++) await new Promise((r) => setTimeout(r, 50));
            return { sent, prob: state.live_prob, text: state.live_text, tokens: state.map_k_tokens[0],
                     shown: el.querySelector('[data-testid=live-prob]').innerText };
        }""", [state, content, base64.b64encode(buffers[0]).decode(), "服务态度很差，不推荐"])
        assert got["sent"] == [{"tfcourse_request": "model", "name": "cls-bert"}]
        assert got["text"] == "服务态度很差，不推荐"
        assert abs(got["prob"] - clf.predict_proba([got["text"]])[0]) < 1e-4        # 同步回 Python 的概率
        assert got["tokens"] == clf.attention(got["text"])["tokens"]
        assert abs(float(got["shown"]) - got["prob"]) < 6e-4
        assert errors == []
    finally:
        ctx.close()
    json.dumps(state)                                                             # 状态能存进笔记本（没有权重）
    assert len(json.dumps(state)) < 100_000


def _fill_candidates(page, widget):
    rows = widget.locator("[data-testid=fill-candidates] .tfc-bar-row")
    return [(r.locator(".tfc-bar-name").inner_text(), float(r.locator(".tfc-bar-value").inner_text())) for r in rows.all()]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_hiding_a_character_on_a_phone_asks_bert_zh_in_the_browser(browser, site_url, scheme):
    from tfcourse.widgets.live import fill_candidates

    fetched = []
    ctx, v = open_page(browser, site_url, chapter_page(12), color_scheme=scheme, wait_for=".tfc-fill",
                       on_response=lambda r: fetched.append(r.url), **PHONE)
    try:
        page = v.page
        w = page.locator(".tfc-fill")
        assert w.count() == 1
        w.scroll_into_view_if_needed()
        text = w.locator("textarea").input_value()
        buttons = w.locator("button.tfc-fill-char")
        pos = [b.get_attribute("aria-pressed") for b in buttons.all()].index("true")
        assert text[pos] == "净" and buttons.nth(pos).inner_text() == "＿"    # 打开在段落说的那个字上
        want, _, _ = fill_candidates(text, pos)
        assert [c for c, _ in _fill_candidates(page, w)] == [c for c, _ in want]
        assert not any(".safetensors" in u for u in fetched)

        before = w.locator("[data-testid=fill-readout]").inner_text()
        buttons.nth(text.index("服")).click()                               # 点另一个字：在浏览器里重算
        page.wait_for_function("([el, b]) => el.querySelector('[data-testid=fill-readout]').innerText !== b",
                               arg=[w.element_handle(), before], timeout=60_000)
        got = _fill_candidates(page, w)
        want, p_orig, rank = fill_candidates(text, text.index("服"))
        assert [c for c, _ in got] == [c for c, _ in want]
        assert all(abs(a - b) < 1e-3 for (_, a), (_, b) in zip(got, want))
        said = w.locator("[data-testid=fill-original]").inner_text()
        assert f"{p_orig:.3f}" in said and f"排第 {rank + 1}" in said
        assert buttons.nth(text.index("服")).get_attribute("aria-pressed") == "true"

        longer = "这家" + text                                                # 在前面加字：遮住的还是「服」
        w.locator("textarea").fill(longer)
        page.wait_for_function("(el) => /浏览器里读了这 17 个字/.test(el.innerText)", arg=w.element_handle(),
                               timeout=60_000)
        pressed = [b.get_attribute("aria-pressed") for b in w.locator("button.tfc-fill-char").all()].index("true")
        assert pressed == longer.index("服"), (pressed, longer)
        want, _, _ = fill_candidates(longer, pressed)
        assert [c for c, _ in _fill_candidates(page, w)] == [c for c, _ in want]

        new = "这家饭店的菜很好吃"                                            # 改句子：遮的位置留在范围内
        w.locator("textarea").fill(new)
        page.wait_for_function("(el) => el.querySelectorAll('button.tfc-fill-char').length === 9",
                               arg=w.element_handle(), timeout=60_000)
        page.wait_for_function("(el) => /浏览器里读了这 9 个字/.test(el.innerText)", arg=w.element_handle(), timeout=60_000)
        pressed = [b.get_attribute("aria-pressed") for b in w.locator("button.tfc-fill-char").all()].index("true")
        want, _, _ = fill_candidates(new, pressed)
        assert [c for c, _ in _fill_candidates(page, w)] == [c for c, _ in want]
        assert sum(".safetensors" in u for u in fetched) == 1 and any(u.endswith("/bert-zh.safetensors") for u in fetched)

        w.locator("textarea").fill("")
        page.wait_for_function("(el) => /先写一句话/.test(el.innerText)", arg=w.element_handle(), timeout=10_000)
        _fits_a_phone_and_reads(page, w, [".tfc-live-label", "[data-testid=fill-readout]", ".tfc-note", "textarea"], scheme)
        v.assert_clean()
    finally:
        ctx.close()


# ---------- 第 13、15 章：读者的开头，课程的 GPT 接着写 ----------

def _rerun(page, gen, action):
    """做一个改动（action(page)），等小部件在浏览器里重写完：先清掉状态行，等它重新写上"写出了 N 个 token"。"""
    gen.locator("[data-testid=live-notes]").evaluate("(el) => { el.textContent = ''; }")
    action(page)
    page.wait_for_function("(el) => /浏览器里写出了/.test(el.querySelector('[data-testid=live-notes]').innerText)",
                           arg=gen.element_handle(), timeout=60_000)


def _slide(key, value):
    return lambda page: page.locator(f".tfc-gen [data-testid={key}]").evaluate(
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }", value)


def _shown(gen) -> dict:
    toks = [t.replace("␣", " ") for t in gen.locator("button.tfc-gen-tok").all_inner_texts()]
    rows = gen.locator("[data-testid=gen-candidates] .tfc-bar-row")
    top = [(r.locator(".tfc-bar-name").inner_text().replace("␣", " "), float(r.locator(".tfc-bar-value").inner_text()))
           for r in rows.all()]
    kept = sum("tfc-dropped" not in (r.get_attribute("class") or "") for r in rows.all())
    return {"tokens": toks, "top": top, "kept_shown": kept, "readout": gen.locator("[data-testid=gen-readout]").inner_text()}


def _expected(name, prompt, **settings) -> dict:
    """Python 一侧（LiveGeneration 打开时用的同一个函数）对同样设置算出的结果，按网页的显示方式整理。"""
    from tfcourse import webmodels
    from tfcourse.widgets.live import _display, generation_steps

    run = generation_steps(name, prompt, **settings)
    _, vocab = webmodels.reference_model(name)
    n_prefix = 1 if settings.get("label") is None else 2
    _, written = _display(vocab, run["prompt_ids"][n_prefix:], run["ids"])
    return {"tokens": written, "steps": run["steps"], "vocab": vocab}


def _same_run(got, want, step=0):
    assert got["tokens"] == want["tokens"], ("".join(got["tokens"]), "".join(want["tokens"]))
    st = want["steps"][step]
    extra = st["rank"] >= 10                                         # 抽中的字不在前 10：多画一行
    assert len(got["top"]) == 10 + extra
    assert [c for c, _ in got["top"][:10]] == [want["vocab"].itos[i] for i, _ in st["top"]]
    assert all(abs(a - b) < 1e-3 for (_, a), (_, b) in zip(got["top"], st["top"]))
    if extra:
        assert got["top"][10][0] == f"第 {st['rank'] + 1}：{want['tokens'][step]}" and abs(got["top"][10][1] - st["drawn_p"]) < 1e-3
    assert got["kept_shown"] == min(st["kept"], 10) + (extra and st["rank"] < st["kept"])
    assert f"排第 {st['rank'] + 1}" in got["readout"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_readers_prompt_is_continued_by_gpt_zh_in_the_browser(browser, site_url, scheme):
    from tfcourse.widgets.live import LiveGeneration

    fetched = []
    ctx, v = open_page(browser, site_url, chapter_page(13), color_scheme=scheme, wait_for=".tfc-gen",
                       on_response=lambda r: fetched.append(r.url), **PHONE)
    try:
        page = v.page
        gen = page.locator(".tfc-gen")
        assert gen.count() == 1
        gen.scroll_into_view_if_needed()
        prompt = gen.locator("textarea").input_value()
        opening = LiveGeneration(prompt)
        assert _shown(gen)["tokens"] == opening.tokens and not any(".safetensors" in u for u in fetched)
        for key in ("top_k", "top_p", "seed"):                                   # 贪心时用不到：灰掉、说明
            assert gen.locator(f"[data-testid={key}]").is_disabled()
        assert gen.locator(".tfc-control output").all_inner_texts().count("贪心时不用") == 3

        _rerun(page, gen, lambda p: gen.locator("textarea").fill("手机的屏幕"))    # 读者的开头，贪心
        _same_run(_shown(gen), _expected("gpt-zh", "手机的屏幕"))
        settings = {"temperature": 1.0, "top_p": 0.9, "seed": 3}                  # 抽样：同样的种子、同样的字
        for key, value in settings.items():
            _rerun(page, gen, _slide(key, value))
        _same_run(_shown(gen), _expected("gpt-zh", "手机的屏幕", **settings))
        _rerun(page, gen, _slide("top_k", 5))
        want = _expected("gpt-zh", "手机的屏幕", top_k=5, **settings)
        _same_run(_shown(gen), want)
        gen.locator("button.tfc-gen-tok").nth(2).click()                          # 点第 3 个字：看那一步
        got = _shown(gen)
        assert got["readout"].startswith(f"第 3 步写出「{want['tokens'][2]}」")
        _same_run(got, want, step=2)
        assert sum(".safetensors" in u for u in fetched) == 1 and any(u.endswith("/gpt-zh.safetensors") for u in fetched)

        _fits_a_phone_and_reads(page, gen, [".tfc-live-label", "[data-testid=gen-readout]", "textarea", "button.tfc-gen-tok"], scheme)
        v.assert_clean()
    finally:
        ctx.close()


def test_control_and_guidance_steer_the_readers_prompt_in_chapter_15(browser, site_url):
    ctx, v = open_page(browser, site_url, chapter_page(15), wait_for=".tfc-gen", **PHONE)
    try:
        page = v.page
        gen = page.locator(".tfc-gen")
        gen.scroll_into_view_if_needed()
        prompt = gen.locator("textarea").input_value()
        g = float(gen.locator("[data-testid=guidance]").input_value())
        base = {"temperature": 1.0, "top_p": 0.9, "seed": 0}
        assert g > 1 and gen.locator("[data-testid=label]").input_value() == "0"
        opening = _expected("gpt-zh-ctrl", prompt, label=0, guidance=g, **base)
        assert _shown(gen)["tokens"] == opening["tokens"]                          # 打开时的视图（Python 算的）
        _rerun(page, gen, lambda p: gen.locator("[data-testid=label]").select_option("1"))
        _same_run(_shown(gen), _expected("gpt-zh-ctrl", prompt, label=1, guidance=g, **base))
        _rerun(page, gen, _slide("guidance", 1))
        _same_run(_shown(gen), _expected("gpt-zh-ctrl", prompt, label=1, guidance=1.0, **base))
        _rerun(page, gen, _slide("temperature", 0))                                # 贪心 + 引导：逐字与 Python 相同
        _rerun(page, gen, _slide("guidance", 3))
        _same_run(_shown(gen), _expected("gpt-zh-ctrl", prompt, label=1, guidance=3.0, **dict(base, temperature=0.0)))
        v.assert_clean()
    finally:
        ctx.close()


def test_the_runtime_listing_in_chapter_13_is_the_code_the_site_runs(browser, site_url, site_dir):
    """第 13 章 6.4 节印出的 JavaScript 与网站真正加载的 runtime.js 里的那个函数一字不差（不是旧的执行结果）。"""
    from tfcourse.webmodels import runtime_function

    ctx, v = open_page(browser, site_url, chapter_page(13))
    try:
        shown = v.page.locator("div.highlight-javascript pre").all_inner_texts()
        assert len(shown) == 1
        served = (site_dir / "_static" / "tfcourse" / "runtime.js").read_text(encoding="utf-8")
        assert shown[0].strip() == runtime_function("multiHeadAttention").strip()
        assert runtime_function("multiHeadAttention").strip() in served
    finally:
        ctx.close()


def test_bert_zh_heads_follow_the_readers_sentence_in_chapter_4(browser, site_url):
    """第 4 章：改句子，8 张图换成 bert-zh 读这句话的注意力（与 Python 的 sentence_heads 相同）；打开时在"前一个字"头。"""
    from tfcourse.widgets.live import sentence_heads

    fetched = []
    ctx, v = open_page(browser, site_url, chapter_page(4), wait_for=".tfc-heatmap-live",
                       on_response=lambda r: fetched.append(r.url), **PHONE)
    try:
        page = v.page
        live, heat = page.locator(".tfc-live"), page.locator(".tfc-heatmap-live")
        opening = live.locator("textarea").input_value()
        w = sentence_heads(opening)["weights"]
        L, H, T = w.shape[:3]
        prev = w[:, :, range(2, T - 1), range(1, T - 2)].mean(-1).reshape(-1)
        assert int(heat.locator("select").input_value()) == int(prev.argmax())      # 打开在"前一个字"头
        assert not any(".safetensors" in u for u in fetched)
        text = "今天的天气真不错"
        live.locator("textarea").fill(text)
        page.wait_for_function("(el) => /浏览器里读了/.test(el.innerText)", arg=live.element_handle(), timeout=60_000)
        att = sentence_heads(text)
        assert heat.locator("thead th[data-col]").all_inner_texts() == att["tokens"]
        for m in (0, 5):
            heat.locator("select").select_option(index=m)
            l, h = divmod(m, H)
            for row, col in ((1, 0), (3, 2), (len(att["tokens"]) - 1, 1)):
                label = heat.locator(f'td[data-row="{row}"][data-col="{col}"]').get_attribute("aria-label")
                assert abs(float(label.rsplit("：", 1)[1]) - float(att["weights"][l, h, row, col])) < 1e-3, (m, row, col)
        assert sum(".safetensors" in u for u in fetched) == 1 and any(u.endswith("/bert-zh.safetensors") for u in fetched)
        assert live.locator("[data-testid=live-prob]").count() == 0                 # 这里没有好评概率
        _fits_a_phone_and_reads(page, live, [".tfc-live-label", "textarea"], "light")
        v.assert_clean()
    finally:
        ctx.close()
