"""浏览器运行时的速度（基准，不是测试）：在无头 Chromium 里量课程的模型，与同一台机器上 torch 的 1 个线程比。

    .venv/bin/python tools/runtime_bench.py          # 先 make book；结果也写进 _build/runtime-bench.json

- gpt-zh、gpt-zh-llama（附录 A）：16 个字的提示之后贪心地写 32 个 token，每个 token 多少毫秒（5 次的中位数）；torch 用 gpt.generate（KV 缓存）；
- cls-bert：读一条 64 个字的评论（probPositive），多少毫秒（先读 4 遍让 JavaScript 引擎编译好，再读 11 遍取中位数）；
  torch 用 predict_proba；
- 冷启动：新开一页（浏览器缓存是空的），从第一次改动第 14 章的评论框到概率换成新的结果，多少毫秒（含从本机服务器取权重）；
- 每个模型的权重文件有多少字节。
目标（issue 24）：每个 token ≤ 5 ms，每条评论 ≤ 20 ms，第一个结果 ≤ 1 s，每个模型 ≤ 2 MB。
"""
from __future__ import annotations

import functools
import http.server
import json
import pathlib
import socketserver
import statistics
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
PROMPT = "这家酒店的位置很好，离地铁站很近"                              # 16 个字
REVIEW = ("房间很干净，床也舒服，早餐种类不多但味道不错。前台服务态度很好，"
          "入住很快。唯一的缺点是隔音一般，晚上能听到走廊的声音，总体满意。")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _torch_side() -> dict:
    import torch

    from tfcourse import gpt, webmodels

    torch.set_num_threads(1)
    per_token = {}
    for name in ("gpt-zh", "gpt-zh-llama"):
        model, vocab = webmodels.reference_model(name)
        ids = torch.tensor([vocab.encode(PROMPT)])
        runs = []
        for _ in range(6):
            t0 = time.perf_counter()
            gpt.generate(model, ids, 32, temperature=0.0)
            runs.append((time.perf_counter() - t0) * 1000 / 32)
        per_token[name] = statistics.median(runs[1:])
    clf, _ = webmodels.reference_model("cls-bert")
    reviews = []
    for _ in range(6):
        t0 = time.perf_counter()
        clf.predict_proba([REVIEW])
        reviews.append((time.perf_counter() - t0) * 1000)
    return {"gpt_ms_per_token": per_token["gpt-zh"], "llama_ms_per_token": per_token["gpt-zh-llama"],
            "cls_ms_per_review": statistics.median(reviews[1:])}


def main() -> int:
    from playwright.sync_api import sync_playwright

    if not (SITE / "index.html").exists():
        print("没有构建好的网站：先运行 make book。")
        return 1
    assert len(PROMPT) == 16 and len(REVIEW) == 64, (len(PROMPT), len(REVIEW))
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    sizes = {p.stem: p.stat().st_size for p in sorted((SITE / "_static" / "tfcourse" / "models").glob("*.safetensors"))}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        ctx = browser.new_context()
        page = ctx.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(url) else r.abort())
        page.goto(f"{url}/book/p4-practice/ch14-sentiment-finetuning.html")
        page.wait_for_selector(".tfc-live textarea")
        t0 = time.perf_counter()
        page.locator(".tfc-live textarea").fill("服务很好，下次还来")
        page.wait_for_function("/浏览器里读了/.test(document.querySelector('[data-testid=live-notes]').innerText)")
        cold_ms = (time.perf_counter() - t0) * 1000
        js = page.evaluate("""async ([prompt, review]) => {
            const g = await window.tfcourse.models.load("gpt-zh"), c = await window.tfcourse.models.load("cls-bert");
            const l = await window.tfcourse.models.load("gpt-zh-llama");
            const ids = g.encode(prompt), tok = [], ltok = [], rev = [];
            for (let i = 0; i < 6; i++) { const t0 = performance.now(); g.generate(ids, 32, { temperature: 0 });
              tok.push((performance.now() - t0) / 32); }
            for (let i = 0; i < 6; i++) { const t0 = performance.now(); l.generate(ids, 32, { temperature: 0 });
              ltok.push((performance.now() - t0) / 32); }
            for (let i = 0; i < 15; i++) { const t0 = performance.now(); c.probPositive(review); rev.push(performance.now() - t0); }
            const med = (a, warm) => { const s = a.slice(warm).sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
            return { gpt_ms_per_token: med(tok, 1), llama_ms_per_token: med(ltok, 1), cls_ms_per_review: med(rev, 4),
                     kernel: c.kernel };
        }""", [PROMPT, REVIEW])
        ctx.close()
        browser.close()
    httpd.shutdown()
    ref = _torch_side()
    result = {"browser": js, "torch_1_thread": ref, "first_result_ms": cold_ms, "bytes": sizes}
    print(f"{'':24}{'浏览器':>10}{'torch 1 线程':>14}{'目标':>8}")
    print(f"{'gpt-zh 每个 token (ms)':24}{js['gpt_ms_per_token']:>10.2f}{ref['gpt_ms_per_token']:>14.2f}{'≤ 5':>8}")
    print(f"{'gpt-zh-llama 每个 token':24}{js['llama_ms_per_token']:>10.2f}{ref['llama_ms_per_token']:>14.2f}{'≤ 5':>8}")
    print(f"{'cls-bert 每条评论 (ms)':24}{js['cls_ms_per_review']:>10.2f}{ref['cls_ms_per_review']:>14.2f}{'≤ 20':>8}")
    print(f"linear 走的路：{js['kernel']}")
    print(f"{'冷启动第一个结果 (ms)':24}{cold_ms:>10.0f}{'':>14}{'≤ 1000':>8}")
    for name, n in sizes.items():
        print(f"{name + ' (字节)':24}{n:>10,}{'':>14}{'≤ 2 MB':>8}")
    out = ROOT / "_build" / "runtime-bench.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"已写入 {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
