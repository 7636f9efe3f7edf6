// RoPE 探索器（anywidget 前端）。旋转后的坐标与打分都由 Python 预先算好（widgets.rope_explorer.rope_view），
// 这里只查表和画图：三个表盘画 q（位置 m）与 k（位置 n）的三对维度，右边画打分随距离 m − n 的变化。

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-rope" });
  el.append(root);
  const N = () => model.get("n_positions");
  root.append(h("div", { class: "tfc-title",
    text: `RoPE：「${model.get("query_char")}」的查询在位置 m，「${model.get("key_char")}」的键在位置 n` }));
  const qs = rangeSlider(model, "query_pos", "查询的位置 m", 0, N() - 1, (v) => String(v));
  const ks = rangeSlider(model, "key_pos", "键的位置 n（≤ m）", 0, N() - 1, (v) => String(v));
  root.append(qs.row, ks.row);
  const shift = h("button", { type: "button", class: "tfc-button", "data-testid": "shift",
    text: "两个都往后挪 8 位（距离不变）" });
  const back = h("button", { type: "button", class: "tfc-button", "data-testid": "reset",
    text: "回到 m = 20、n = 17" });
  root.append(h("div", { class: "tfc-control" }, shift, back));
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite", "data-testid": "rope-readout" });
  root.append(readout);
  const charts = h("div", { class: "tfc-charts" });
  root.append(charts);
  const dials = h("div", { class: "tfc-rope-dials", "data-testid": "rope-dials" });
  const W = 380, H = 200, ml = 44, mr = 10, mt = 20, mb = 34;
  const curve = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", style: "max-width:380px",
    "data-testid": "rope-curve" });
  charts.append(dials, h("div", {}, curve));
  root.append(h("div", { class: "tfc-note", text: "表盘：实线箭头是 q（转过 m·ω），虚线箭头是 k（转过 n·ω）；两根箭头的夹角只取决于 m − n。"
    + "曲线：位置 m 的查询对位置 m − d 的键的打分，d 是距离；竖线是训练窗口的边。" }));

  const score = (m, n) => model.get("scores")[(m * (m + 1)) / 2 + n];
  const pair = (key, p, j) => { const P = model.get("pairs").length, a = model.get(key); return [a[(p * P + j) * 2], a[(p * P + j) * 2 + 1]]; };

  shift.addEventListener("click", () => {
    const m = model.get("query_pos"), n = model.get("key_pos"), d = Math.min(8, N() - 1 - m);
    commit(model, { query_pos: m + d, key_pos: n + d });
  });
  back.addEventListener("click", () => commit(model, { query_pos: Math.min(20, N() - 1), key_pos: Math.min(17, N() - 1) }));
  // 键不能在查询之后：拖动时夹回
  qs.input.addEventListener("input", () => { if (model.get("key_pos") > model.get("query_pos")) commit(model, { key_pos: model.get("query_pos") }); });
  ks.input.addEventListener("input", () => { if (model.get("key_pos") > model.get("query_pos")) commit(model, { key_pos: model.get("query_pos") }); });

  function dial(j, m, n) {
    const R = 46, c = 56, svg = s("svg", { viewBox: "0 0 112 132", width: "112", role: "img" });
    const [qx, qy] = pair("q_pairs", m, j), [kx, ky] = pair("k_pairs", n, j);
    const scale = R / Math.max(Math.hypot(qx, qy), Math.hypot(kx, ky), 1e-9);
    svg.append(s("circle", { class: "tfc-grid", cx: c, cy: c, r: R, fill: "none" }));
    svg.append(s("line", { class: "tfc-curve", x1: c, y1: c, x2: c + qx * scale, y2: c - qy * scale }));
    svg.append(s("line", { class: "tfc-ref", x1: c, y1: c, x2: c + kx * scale, y2: c - ky * scale }));
    const i = model.get("pairs")[j], w = model.get("omega")[j];
    svg.append(s("text", { x: c, y: 126, "text-anchor": "middle", class: "tfc-xtick" }, `第 ${i} 对 ω=${w.toPrecision(2)}`));
    const angle = (Math.atan2(qy, qx) - Math.atan2(ky, kx)) * 180 / Math.PI;
    svg.setAttribute("aria-label", `第 ${i} 对维度：q 与 k 的夹角 ${(((angle % 360) + 540) % 360 - 180).toFixed(0)} 度`);
    return svg;
  }

  function draw() {
    const n0 = N(), m = clamp(model.get("query_pos"), 0, n0 - 1), n = clamp(model.get("key_pos"), 0, m);
    qs.sync(m);
    ks.sync(n);
    const d = m - n, here = score(m, n);
    let lo = Infinity, hi = -Infinity;                       // 同一距离 d 的所有 (m′, n′)：打分一样吗？
    for (let mm = d; mm < n0; mm++) { const v = score(mm, mm - d); lo = Math.min(lo, v); hi = Math.max(hi, v); }
    readout.replaceChildren(
      `m = ${m}，n = ${n}，距离 m − n = `, h("strong", { "data-testid": "offset", text: String(d) }),
      "；打分 (R_m q)·(R_n k)/√D = ", h("strong", { "data-testid": "score", text: here.toFixed(4) }),
      h("br"),
      `距离同为 ${d} 的全部 ${n0 - d} 对位置，打分从 ${lo.toFixed(4)} 到 ${hi.toFixed(4)}：只取决于距离。`);
    shift.disabled = m >= n0 - 1;
    dials.replaceChildren(...model.get("pairs").map((_, j) => dial(j, m, n)));

    curve.replaceChildren();
    const xs = [], ys = [];
    for (let dd = 0; dd <= m; dd++) { xs.push(dd); ys.push(score(m, m - dd)); }
    const yl = Math.min(...ys), yh = Math.max(...ys);
    const fx = (v) => ml + (v / Math.max(n0 - 1, 1)) * (W - ml - mr);
    const fy = (v) => mt + (1 - (v - yl) / (yh - yl || 1)) * (H - mt - mb);
    curve.append(s("line", { class: "tfc-axis", x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    curve.append(s("line", { class: "tfc-axis", x1: ml, x2: ml, y1: mt, y2: H - mb }));
    curve.append(s("text", { x: (ml + W - mr) / 2, y: H - 4, "text-anchor": "middle" }, "距离 d = m − n"));
    curve.append(s("text", { x: ml, y: 12, "text-anchor": "start" }, `位置 ${m} 的查询的打分`));
    for (const v of [0, 32, 64, 96, n0 - 1].filter((v) => v < n0)) {
      curve.append(s("text", { x: fx(v), y: H - mb + 15, "text-anchor": "middle", class: "tfc-xtick" }, String(v)));
    }
    for (const v of [yl, yh]) curve.append(s("text", { x: ml - 4, y: fy(v) + 4, "text-anchor": "end" }, v.toFixed(1)));
    const win = model.get("window");
    if (win < n0) curve.append(s("line", { class: "tfc-grid", x1: fx(win), x2: fx(win), y1: mt, y2: H - mb }));
    curve.append(s("polyline", { class: "tfc-curve", points: xs.map((x, i) => `${fx(x).toFixed(1)},${fy(ys[i]).toFixed(1)}`).join(" ") }));
    curve.append(s("circle", { class: "tfc-marker", cx: fx(d), cy: fy(here), r: 4 }));
    curve.setAttribute("aria-label", `位置 ${m} 的查询：距离 ${d} 处打分 ${here.toFixed(4)}`);
  }

  const schedule = batched(draw);
  const events = ["query_pos", "key_pos", "scores", "q_pairs", "k_pairs", "n_positions"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
