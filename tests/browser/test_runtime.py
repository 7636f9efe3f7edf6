"""网站上的模型运行时（_static/tfcourse/runtime.js）：在 Chromium 里用读者会输入的各种文字，
逐个核对 encode、logits 与贪心续写都和 torch 一致（两边都用同一份 float16 权重、按 float32 计算）。"""
from __future__ import annotations

import base64

import pytest
import torch

from conftest import chapter_pages, open_page

TOL = 1e-4                    # 相对于这一行 logits 的最大绝对值


def _texts() -> list[str]:
    from tfcourse.data.reviews import load_reviews

    reviews = load_reviews()
    picked = [t for t in reviews.texts[:4000:160]] + [t for t in reviews.texts[-4000::160]]   # 好评、差评各一些
    special = ["。", "好", "！？，。、；：", "2024 年 3 月 15 日，价格 99.5 元", "iPhone 15 Pro Max 真香",
               "GPT and BERT", "😀😡👍 表情", "饕餮耄耋龘", "𠮷野家", "   ", "好" * 64, "差评" * 40, "好差" * 130,
               "a", "\n换行\n", "Ｆｕｌｌ－ｗｉｄｔｈ１２３"]
    return picked + special


@pytest.fixture(scope="module")
def runtime(browser, site_url):
    ctx, v = open_page(browser, site_url, chapter_pages()[12])
    v.page.wait_for_function("window.tfcourse && window.tfcourse.models", timeout=60_000)
    yield v
    ctx.close()


def test_every_chapter_page_offers_the_models_without_fetching_weights(browser, site_url):
    for path in (chapter_pages()[0], chapter_pages()[-1]):
        urls = []
        ctx, v = open_page(browser, site_url, path, on_response=lambda r: urls.append(r.url))
        try:
            v.page.wait_for_function("window.tfcourse && typeof window.tfcourse.models.load === 'function'",
                                     timeout=60_000)
            assert any(u.split("?")[0].endswith("/runtime.js") for u in urls)
            assert not any(".safetensors" in u for u in urls), "页面一打开就下载了权重"   # 页面重量不变
            v.assert_clean()
        finally:
            ctx.close()


@pytest.mark.parametrize("name", ["gpt-zh", "gpt-zh-ctrl", "gpt-zh-llama"])
def test_gpt_matches_torch_on_readers_texts(runtime, name):
    from tfcourse import gpt, webmodels

    model, vocab = webmodels.reference_model(name)
    texts = _texts()
    assert len(texts) >= 50
    got = runtime.page.evaluate("""async ([name, texts]) => {
        const m = await window.tfcourse.models.load(name);
        return texts.map((t) => {
          const ids = m.encode(t);
          const window_ = ids.slice(0, m.config.max_len);
          const n = Math.min(8, m.config.max_len - window_.length);
          return { ids, logits: Array.from(m.logits(window_)), gen: m.generate(window_, n, { temperature: 0 }), n };
        });
    }""", [name, texts])
    worst = 0.0
    for text, r in zip(texts, got):
        assert r["ids"] == vocab.encode(text), text
        ids = r["ids"][:model.config.max_len]
        with torch.no_grad():
            ref = model(torch.tensor([ids]))[0, -1]
        diff = float((torch.tensor(r["logits"]) - ref).abs().max() / ref.abs().max())
        worst = max(worst, diff)
        assert diff < TOL, (text, diff)
        greedy = gpt.generate(model, torch.tensor([ids]), r["n"], temperature=0.0)[0].tolist()
        assert r["gen"] == greedy, (text, vocab.decode(r["gen"]), vocab.decode(greedy))
    assert any(r["n"] == 0 for r in got) and any(1 in r["ids"] for r in got)   # 用到了整个窗口、字表外的字
    print(f"{name}：{len(texts)} 段文字，logits 的最大相对差 {worst:.1e}")
    runtime.assert_clean()


def test_guided_greedy_continuations_match_torch(runtime):
    """第 15 章的做法：⏎ <好评>（或 <差评>）加读者的开头，反面提示换成相反的控制 token，γ = 1、2、4。"""
    from tfcourse import control, gpt, webmodels

    model, vocab = webmodels.reference_model("gpt-zh-ctrl")
    pos, neg = (vocab.id(control.CONTROL_TOKENS[k]) for k in (1, 0))
    never = [vocab.unk_id, pos, neg]
    cases = [(label, start, g) for label in (1, 0) for start in ("", "这家店", "房间", "快递很") for g in (1.0, 2.0, 4.0)]
    inputs = []
    for label, start, g in cases:
        want, other = (pos, neg) if label else (neg, pos)
        inputs.append({"ids": [0, want] + vocab.encode(start), "neg": [0, other] + vocab.encode(start), "g": g})
    got = runtime.page.evaluate("""async ([cases, never]) => {
        const m = await window.tfcourse.models.load("gpt-zh-ctrl");
        return cases.map((c) => m.generate(c.ids, 24, { temperature: 0, suppress_ids: never, guidance_scale: c.g,
                                                         negative_prompt_ids: c.g === 1 ? null : c.neg }));
    }""", [inputs, never])
    changed = 0
    for c, js in zip(inputs, got):
        ref = gpt.generate(model, torch.tensor([c["ids"]]), 24, temperature=0.0, suppress_ids=never,
                           guidance_scale=c["g"],
                           negative_prompt_ids=None if c["g"] == 1.0 else torch.tensor([c["neg"]]))[0].tolist()
        assert js == ref, (vocab.decode(js), vocab.decode(ref))
        changed += c["g"] != 1.0 and js != got[inputs.index(dict(c, g=1.0, neg=c["neg"]))]
    assert changed > 0                                       # 引导真的改变了续写（不是被忽略了）


def test_sampling_rules_match_torch(runtime):
    """温度 → top-k → top-p 之后留下的 token 与概率，和 sampling.apply_sampling_rules 的 softmax 相同（含并列的打分）。"""
    from tfcourse.sampling import apply_sampling_rules

    g = torch.Generator().manual_seed(0)
    rows = [torch.randn(50, generator=g) * s for s in (0.5, 2.0, 6.0)]
    tied = torch.randn(50, generator=g)
    tied[[3, 7, 11]] = tied.max() + 1.0                        # 三个并列第一
    rows.append(tied)
    options = [{"temperature": t, "top_k": k, "top_p": p} for t in (0.5, 1.0, 1.5) for k in (None, 1, 2, 10)
               for p in (None, 0.5, 0.9)]
    url = runtime.page.evaluate("() => new URL('../../_static/tfcourse/runtime.js', location.href).href")
    got = runtime.page.evaluate("""async ([url, rows, options]) => {
        const rt = await import(url);
        return rows.map((r) => options.map((o) => rt.applySamplingRules(Float32Array.from(r), o)));
    }""", [url, [r.tolist() for r in rows], options])
    for r, per_row in zip(rows, got):
        for o, js in zip(options, per_row):
            ref = apply_sampling_rules(r[None], o["temperature"], o["top_k"], o["top_p"]).softmax(-1)[0]
            kept = sorted(int(i) for i in torch.nonzero(ref > 0))
            assert sorted(js["ids"]) == kept, (o, js["ids"], kept)
            for i, p in zip(js["ids"], js["probs"]):
                assert abs(p - float(ref[i])) < 1e-6, (o, i, p, float(ref[i]))


def test_bad_input_gets_a_clear_error(runtime):
    errors = runtime.page.evaluate("""async () => {
        const m = await window.tfcourse.models.load("gpt-zh");
        const tries = [() => m.logits([]), () => m.logits(new Array(65).fill(5)), () => m.logits([5, 99999]),
                       () => m.generate([5], 64, { temperature: 0 }), () => m.encode(42),
                       () => m.generate([5, 6], 4, { temperature: 0, guidance_scale: 2 }),
                       () => m.generate([5, 6], 4, { temperature: 0, guidance_scale: 2, negative_prompt_ids: [5] })];
        return tries.map((f) => { try { f(); return null; } catch (e) { return String(e.message); } });
    }""")
    assert all(errors), errors
    assert "至少" in errors[0] and "max_len=64" in errors[1] and "0…4003" in errors[2]
    assert "max_len=64" in errors[3] and "字符串" in errors[4]
    assert "negative_prompt_ids" in errors[5] and "一样长" in errors[6]
    missing = runtime.page.evaluate("""() => window.tfcourse.models.load("no-such-model").then(
        () => null, (e) => String(e.message))""")
    assert missing and "no-such-model" in missing


def test_bert_masked_lm_matches_torch_on_readers_texts(runtime):
    """bert-zh：encode 与字表相同（不加 [CLS]/[SEP]）；logits 是 T × V，与 BertForMaskedLM 相同——
    第 12 章填空的输入（[CLS] + 字 + [SEP]，遮住一个字）和不加特殊 token 的原样输入都试。"""
    from tfcourse import webmodels

    model, vocab = webmodels.reference_model("bert-zh")
    texts = _texts()
    cls, sep, mask = (vocab.id(t) for t in ("[CLS]", "[SEP]", "[MASK]"))
    js = """async ([texts, cls, sep, mask, first]) => {
        const m = await window.tfcourse.models.load("bert-zh");
        const b64 = (a) => { const u = new Uint8Array(a.buffer); let s = "";
          for (let i = 0; i < u.length; i += 8192) s += String.fromCharCode(...u.subarray(i, i + 8192)); return btoa(s); };
        return texts.map((t, k) => {
          const i = first + k, ids = m.encode(t);
          const body = ids.slice(0, m.config.max_len - 2);
          const filled = [cls, ...body, sep];
          filled[1 + (i % body.length)] = mask;            // 遮住一个字（第 12 章 fill 的输入）
          const raw = ids.slice(0, m.config.max_len);
          return { ids, filled, a: b64(m.logits(filled)), b: b64(m.logits(raw)) };   // T × V 个 float32，按行摊平
        });
    }"""
    got = []
    for first in range(0, len(texts), 8):                     # 每次 8 段：T × V 的 logits 很大
        got += runtime.page.evaluate(js, [texts[first:first + 8], cls, sep, mask, first])
    worst = 0.0
    V = model.config.vocab_size
    for text, r in zip(texts, got):
        assert r["ids"] == vocab.encode(text), text
        for ids, js in ((r["filled"], r["a"]), (r["ids"][:model.config.max_len], r["b"])):
            with torch.no_grad():
                ref = model(torch.tensor([ids]))[0]                      # (T, V)
            js = torch.frombuffer(bytearray(base64.b64decode(js)), dtype=torch.float32).view(len(ids), V)
            diff = float(((js - ref).abs().amax(-1) / ref.abs().amax(-1)).max())
            worst = max(worst, diff)
            assert diff < TOL, (text, diff)
            assert torch.equal(js.argmax(-1), ref.argmax(-1)) or diff < 1e-5, text
    print(f"bert-zh：{len(texts)} 段文字 × 2 种输入，logits 的最大相对差 {worst:.1e}")


def test_review_classifier_matches_torch_on_readers_texts(runtime):
    """cls-bert：probPositive 与 predict_proba 相同，attention 的 tokens 与最后一层 H × T × T 的权重与 .attention 相同。"""
    from tfcourse import webmodels

    clf, _ = webmodels.reference_model("cls-bert")
    texts = [t for t in _texts() if t]
    got = runtime.page.evaluate("""async (texts) => {
        const m = await window.tfcourse.models.load("cls-bert");
        return texts.map((t) => ({ ids: m.encode(t), p: m.probPositive(t), att: m.attention(t) }));
    }""", texts)
    p_ref = clf.predict_proba(texts)
    worst_p = worst_w = 0.0
    for text, r, p in zip(texts, got, p_ref):
        assert r["ids"] == clf.encoder.encode(text), text
        worst_p = max(worst_p, abs(r["p"] - float(p)))
        assert abs(r["p"] - float(p)) < TOL, (text, r["p"], float(p))
        ref = clf.attention(text)
        assert r["att"]["tokens"] == ref["tokens"], text
        w = torch.tensor(r["att"]["weights"])
        assert w.shape == ref["weights"].shape
        worst_w = max(worst_w, float((w - torch.from_numpy(ref["weights"])).abs().max()))
        assert worst_w < TOL, text
        assert abs(r["att"]["p_positive"] - r["p"]) < 1e-6
    assert any(len(r["ids"]) == clf.encoder.max_len for r in got)           # 截断到 max_len 的长评论
    assert min(p_ref) < 0.2 and max(p_ref) > 0.8                           # 好评、差评都有
    print(f"cls-bert：{len(texts)} 段文字，概率的最大差 {worst_p:.1e}，注意力权重的最大差 {worst_w:.1e}")


def test_bert_logits_at_one_position_are_that_row_of_the_full_logits(runtime):
    """logitsAt(ids, t)（第 12 章的填空只算被遮住的那一行）与 logits(ids) 的第 t 行相同；位置越界给出说明。"""
    got = runtime.page.evaluate("""async () => {
        const m = await window.tfcourse.models.load("bert-zh");
        const ids = m.encode("酒店的服务很好，房间也很干净。"), V = m.config.vocab_size;
        const full = m.logits(ids);
        let worst = 0;
        for (const t of [0, 3, ids.length - 1]) {
          const row = m.logitsAt(ids, t);
          for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs(row[v] - full[t * V + v]));
        }
        let error = null;
        try { m.logitsAt(ids, ids.length); } catch (e) { error = e.message; }
        return { worst, error };
    }""")
    assert got["worst"] < 1e-4 and "position" in got["error"]


def test_webassembly_and_javascript_paths_both_match_torch(runtime):
    """linear 有两条路：支持 WebAssembly SIMD 的浏览器走 SIMD（Chromium 是，上面的核对都走这条路），
    否则走 JavaScript。两条路的 gpt-zh logits、cls-bert 概率都与 torch 相同，彼此之间也只差 float32 的舍入。"""
    from tfcourse import webmodels

    gpt_model, vocab = webmodels.reference_model("gpt-zh")
    clf, _ = webmodels.reference_model("cls-bert")
    texts = [t for t in _texts() if t.strip()][::3]
    got = runtime.page.evaluate("""async (texts) => {
        const site = await window.tfcourse.models.load("cls-bert");
        const rt = await import(new URL("../../_static/tfcourse/runtime.js", location.href).href);
        const bytes = async (name) =>
          (await fetch(new URL(`../../_static/tfcourse/models/${name}.safetensors`, location.href))).arrayBuffer();
        const [g, c] = [await bytes("gpt-zh"), await bytes("cls-bert")], out = { site: site.kernel };
        for (const simd of [true, false]) {
          rt.settings.simd = simd;
          const gm = rt.fromSafetensors("gpt-zh", g), cm = rt.fromSafetensors("cls-bert", c);
          out[gm.kernel] = texts.map((t) => ({
            logits: Array.from(gm.logits(gm.encode(t).slice(0, gm.config.max_len))), p: cm.probPositive(t),
            kernels: [gm.kernel, cm.kernel] }));
        }
        rt.settings.simd = true;
        return out;
    }""", texts)
    assert got["site"] == "WebAssembly SIMD"
    fast, slow = got["WebAssembly SIMD"], got["JavaScript"]
    assert {tuple(r["kernels"]) for r in fast} == {("WebAssembly SIMD",) * 2}
    assert {tuple(r["kernels"]) for r in slow} == {("JavaScript",) * 2}
    p_ref = clf.predict_proba(texts)
    for text, a, b, p in zip(texts, fast, slow, p_ref):
        with torch.no_grad():
            ref = gpt_model(torch.tensor([vocab.encode(text)[:gpt_model.config.max_len]]))[0, -1]
        scale = float(ref.abs().max())
        for r in (a, b):
            assert float((torch.tensor(r["logits"]) - ref).abs().max()) < TOL * scale, text
            assert abs(r["p"] - float(p)) < TOL, text
        assert float((torch.tensor(a["logits"]) - torch.tensor(b["logits"])).abs().max()) < 1e-5 * scale, text
    assert any(a["logits"] != b["logits"] for a, b in zip(fast, slow))     # 真的是两条不同的路
