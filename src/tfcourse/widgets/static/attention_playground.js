// 注意力游乐场（anywidget 前端）。键、值、词和初始查询由 Python 给出；
// 读者拖动查询时，这里只做点积与 softmax（与 tfcourse.attention.simple_attention 相同的三步），再把结果画出来。

const dot2 = (a, b) => a[0] * b[0] + a[1] * b[1];
function softmax(xs) {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - m));       // 先减最大值，防止溢出
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / z);
}

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-ap" });
  el.append(root);
  const SIZE = 300, PAD = 26;                     // SVG 画布（viewBox 单位）
  let dragging = false;

  const lim = () => model.get("limit");
  const step = () => model.get("step");
  const px = (v) => PAD + ((v + lim()) / (2 * lim())) * (SIZE - 2 * PAD);       // 数值 → 画布 x
  const py = (v) => SIZE - PAD - ((v + lim()) / (2 * lim())) * (SIZE - 2 * PAD); // 数值 → 画布 y（向上为正）
  const snap = (v) => {
    const st = step(), L = lim();
    return Number(clamp(Math.round(v / st) * st, -L, L).toFixed(6));
  };
  const f2 = (v) => Number(v).toFixed(2);
  const f3 = (v) => Number(v).toFixed(3);
  const vec = (p, fmt = f2) => `(${fmt(p[0])}, ${fmt(p[1])})`;

  const title = h("div", { class: "tfc-title" });
  const plane = s("svg", { viewBox: `0 0 ${SIZE} ${SIZE}`, width: "100%", class: "ap-plane", role: "group",
    "aria-label": "二维平面：拖动橙色的查询向量（或聚焦后用方向键移动）" });
  const panel = h("div", { class: "ap-panel" });
  root.append(title, h("div", { class: "ap-layout" }, h("div", { class: "ap-planebox" }, plane), panel));
  root.append(h("div", { class: "tfc-note", text: "拖动橙色圆点（或按 Tab 选中它后用方向键移动，按住 Shift 一次走 5 档），" +
    "看打分、softmax 权重和加权和怎样跟着变。灰点是键，菱形是输出（值的加权和）。" }));

  function setQuery(q) {
    const cur = model.get("query") || [0, 0];
    const next = [snap(q[0]), snap(q[1])];
    if (next[0] !== cur[0] || next[1] !== cur[1]) commit(model, { query: next });
  }

  function fromPointer(ev) {
    const ctm = plane.getScreenCTM();
    if (!ctm) return null;
    const pt = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
    const L = lim(), span = SIZE - 2 * PAD;
    return [((pt.x - PAD) / span) * 2 * L - L, ((SIZE - PAD - pt.y) / span) * 2 * L - L];
  }
  plane.addEventListener("pointerdown", (ev) => {
    const q = fromPointer(ev);
    if (!q) return;
    ev.preventDefault();
    dragging = true;
    try { plane.setPointerCapture(ev.pointerId); } catch (e) { /* 合成事件没有可捕获的指针 */ }
    setQuery(q);
  });
  plane.addEventListener("pointermove", (ev) => { if (dragging) { const q = fromPointer(ev); if (q) setQuery(q); } });
  const stop = () => { dragging = false; };
  plane.addEventListener("pointerup", stop);
  plane.addEventListener("pointercancel", stop);

  function onKey(ev) {
    const q = (model.get("query") || [0, 0]).slice();
    const st = step() * (ev.shiftKey ? 5 : 1);
    if (ev.key === "ArrowLeft") q[0] -= st;
    else if (ev.key === "ArrowRight") q[0] += st;
    else if (ev.key === "ArrowUp") q[1] += st;
    else if (ev.key === "ArrowDown") q[1] -= st;
    else return;
    ev.preventDefault();
    setQuery(q);
  }

  function drawPlane(q, keys, tokens, out, weights) {
    const hadFocus = plane.contains(document.activeElement);
    plane.replaceChildren();
    const L = lim();
    const ticks = [];
    for (let v = -Math.floor(L / 0.5) * 0.5; v <= L + 1e-9; v += 0.5) ticks.push(Number(v.toFixed(6)));
    for (const v of ticks) {
      plane.append(s("line", { class: "tfc-grid", x1: px(-L), x2: px(L), y1: py(v), y2: py(v) }));
      plane.append(s("line", { class: "tfc-grid", x1: px(v), x2: px(v), y1: py(-L), y2: py(L) }));
      if (v !== 0 && Number.isInteger(v)) {
        plane.append(s("text", { x: px(v), y: py(0) + 13, "text-anchor": "middle", class: "ap-tick" }, String(v)));
        plane.append(s("text", { x: px(0) - 4, y: py(v) + 4, "text-anchor": "end", class: "ap-tick" }, String(v)));
      }
    }
    plane.append(s("line", { class: "tfc-axis", x1: px(-L), x2: px(L), y1: py(0), y2: py(0) }));
    plane.append(s("line", { class: "tfc-axis", x1: px(0), x2: px(0), y1: py(-L), y2: py(L) }));
    plane.append(s("text", { x: px(L) - 2, y: py(0) - 5, "text-anchor": "end", class: "ap-tick" }, "x"));
    plane.append(s("text", { x: px(0) + 5, y: py(L) + 10, class: "ap-tick" }, "y"));
    keys.forEach((k, i) => {
      const r = 4 + 7 * weights[i];                 // 权重越大，键的圆点越大
      plane.append(s("line", { class: "ap-keyline", x1: px(0), y1: py(0), x2: px(k[0]), y2: py(k[1]) }));
      plane.append(s("circle", { class: "ap-key", cx: px(k[0]), cy: py(k[1]), r: r.toFixed(1) }));
      const right = k[0] >= 0;
      plane.append(s("text", { class: "ap-keylabel", x: px(k[0]) + (right ? 1 : -1) * (r + 4), y: py(k[1]) - 6,
        "text-anchor": right ? "start" : "end" }, tokens[i]));
    });
    const ox = px(out[0]), oy = py(out[1]);
    plane.append(s("polygon", { class: "ap-out", points: `${ox},${oy - 7} ${ox + 7},${oy} ${ox},${oy + 7} ${ox - 7},${oy}` }));
    plane.append(s("line", { class: "ap-qline", x1: px(0), y1: py(0), x2: px(q[0]), y2: py(q[1]) }));
    const handle = s("circle", { class: "ap-query", cx: px(q[0]), cy: py(q[1]), r: 9, tabindex: "0", role: "button",
      "data-testid": "ap-handle",
      "aria-label": `${model.get("query_label")} = ${vec(q)}：用方向键移动（Shift 一次 5 档）` });
    handle.addEventListener("keydown", onKey);
    plane.append(handle);
    plane.append(s("text", { class: "ap-qlabel", x: px(q[0]) + 12, y: py(q[1]) + 16 }, "q"));
    if (hadFocus) handle.focus();
  }

  function draw() {
    const tokens = model.get("tokens") || [];
    const keys = model.get("key_vectors") || [];
    const values = model.get("value_vectors") || keys;
    const q = model.get("query") || [0, 0];
    title.textContent = model.get("title") || "";
    title.hidden = !model.get("title");
    const scores = keys.map((k) => dot2(q, k));                 // 第 1 步：打分 q·k
    const weights = softmax(scores);                            // 第 2 步：softmax
    const out = [0, 1].map((d) => values.reduce((a, v, i) => a + weights[i] * v[d], 0));   // 第 3 步：加权和
    drawPlane(q, keys, tokens, out, weights);

    panel.replaceChildren();
    panel.append(h("div", { class: "tfc-readout" }, `${model.get("query_label")} = `,
      h("strong", { "data-testid": "ap-query", text: vec(q) })));
    const table = h("table", { class: "ap-table" });
    table.append(h("thead", {}, h("tr", {},
      h("th", { text: "词" }), h("th", { text: "键 k" }), h("th", { text: "① 打分 q·k" }), h("th", { text: "② 权重 softmax" }))));
    const body = h("tbody");
    keys.forEach((k, i) => {
      const fill = h("div", { class: "ap-bar-fill" });
      fill.style.width = `${(clamp(weights[i], 0, 1) * 100).toFixed(1)}%`;
      body.append(h("tr", {},
        h("th", { scope: "row", text: tokens[i] }),
        h("td", { class: "ap-num", text: vec(k) }),
        h("td", { class: "ap-num", "data-testid": `ap-score-${i}`, text: f3(scores[i]) }),
        h("td", { class: "ap-weight" },
          h("div", { class: "ap-bar-track", "aria-hidden": "true" }, fill),
          h("span", { class: "ap-num", "data-testid": `ap-weight-${i}`, text: f3(weights[i]) }))));
    });
    table.append(body);
    panel.append(h("div", { class: "ap-scroll" }, table));
    const terms = values.map((v, i) => `${f3(weights[i])}·${vec(v)}`).join(" + ");
    panel.append(h("div", { class: "ap-sum" }, "③ 输出 = Σ 权重 × 值 = ", h("span", { class: "ap-terms", text: terms }), " = ",
      h("strong", { "data-testid": "ap-output", text: vec(out, f3) })));
  }

  const events = ["tokens", "key_vectors", "value_vectors", "query", "limit", "step", "title", "query_label"];
  const schedule = batched(draw);
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
