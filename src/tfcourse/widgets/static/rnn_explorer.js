// RNN 记忆探索器（anywidget 前端）。整张参数网格由 Python 预先算好，这里只查表和画图。

// 与 Python 的 tfcourse.widgets.format_state 保持一致
export function formatState(v) {
  if (v === 0) return "0";
  if (Math.abs(v) >= 1e-3) return v.toFixed(4);
  const [m, e] = v.toExponential(2).split("e");
  return `${m}e${parseInt(e, 10)}`;
}

function formatPercent(v) {
  const p = v * 100;
  return Math.abs(p) >= 0.1 ? `${p.toFixed(1)}%` : `${Number(p.toPrecision(2))}%`;
}

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-rnn" });
  el.append(root);

  const hhVals = () => model.get("w_hh_values");
  const xhVals = () => model.get("w_xh_values");
  const maxLen = () => model.get("max_len");

  const sliders = [
    rangeSlider(model, "w_hh_index", "循环权重 W_hh", 0, hhVals().length - 1, (i) => hhVals()[i].toFixed(2)),
    rangeSlider(model, "w_xh_index", "输入权重 W_xh", 0, xhVals().length - 1, (i) => xhVals()[i].toFixed(2)),
    rangeSlider(model, "length", "序列长度 L", 1, maxLen(), (v) => String(v)),
  ];
  root.append(h("div", { class: "tfc-title", text: "RNN 记忆探索器：输入 [1, 0, 0, …]，开头的信号传到第 L 步还剩多少？" }));
  for (const sl of sliders) root.append(sl.row);
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite" });
  root.append(readout);
  const W = 560, H = 230, ml = 48, mr = 16, mt = 14, mb = 40;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", style: "max-width:560px" });
  root.append(svg);
  root.append(h("div", { class: "tfc-note", text: "蓝色实线：RNN 第 t 步的隐藏状态 h_t；橙色虚线：注意力直接回头看开头时读出的值（权重 α，与长度无关）。" }));

  function draw() {
    const nHH = hhVals().length, nXH = xhVals().length, T = maxLen();
    const i = clamp(model.get("w_hh_index"), 0, nHH - 1);
    const j = clamp(model.get("w_xh_index"), 0, nXH - 1);
    const L = clamp(model.get("length"), 1, T);
    const values = { w_hh_index: i, w_xh_index: j, length: L };
    for (const sl of sliders) sl.sync(values[sl.key]);
    const curves = model.get("curves");
    const start = (i * nXH + j) * T;
    const curve = curves.slice(start, start + T);
    const hL = curve[L - 1];
    const alpha = model.get("attention_alpha");

    readout.replaceChildren(
      `W_hh = ${hhVals()[i].toFixed(2)}，W_xh = ${xhVals()[j].toFixed(2)}，L = ${L}：末尾隐藏状态 h_L = `,
      h("strong", { "data-testid": "rnn-value", text: formatState(hL) }),
      `（约为开头输入 1 的 ${formatPercent(hL)}）`,
      h("br"),
      `注意力对照：开头位置权重 α = ${alpha}，读出值 = `,
      h("strong", { "data-testid": "attention-value", text: alpha.toFixed(4) }),
      "，与 L 无关。"
    );

    let ymin = 0, ymax = 1;
    for (const v of curve) { ymin = Math.min(ymin, v); ymax = Math.max(ymax, v); }
    const x = (t) => ml + ((t - 1) / Math.max(T - 1, 1)) * (W - ml - mr);
    const y = (v) => mt + (1 - (v - ymin) / (ymax - ymin)) * (H - mt - mb);
    svg.replaceChildren();
    svg.setAttribute("aria-label", `衰减曲线：L = ${L} 时 h_L = ${formatState(hL)}`);
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      svg.append(s("line", { class: "tfc-grid", x1: ml, x2: W - mr, y1: y(v), y2: y(v) }));
      svg.append(s("text", { x: ml - 6, y: y(v) + 4, "text-anchor": "end" }, v.toFixed(2)));
    }
    const step = T <= 20 ? 5 : T <= 60 ? 10 : 20;
    for (let t = 0; t <= T; t += step) {
      const tt = Math.max(t, 1);
      svg.append(s("text", { x: x(tt), y: H - mb + 16, "text-anchor": "middle" }, String(tt)));
    }
    svg.append(s("line", { class: "tfc-axis", x1: ml, x2: W - mr, y1: y(ymin), y2: y(ymin) }));
    svg.append(s("line", { class: "tfc-axis", x1: ml, x2: ml, y1: mt, y2: H - mb }));
    svg.append(s("text", { x: (ml + W - mr) / 2, y: H - 6, "text-anchor": "middle" }, "时间步 t"));
    svg.append(s("text", { x: 12, y: (mt + H - mb) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(mt + H - mb) / 2})` }, "隐藏状态 h_t"));
    svg.append(s("polyline", { class: "tfc-ref", points: `${x(1)},${y(alpha)} ${x(T)},${y(alpha)}` }));
    svg.append(s("polyline", { class: "tfc-curve", points: curve.map((v, k) => `${x(k + 1).toFixed(1)},${y(v).toFixed(1)}`).join(" ") }));
    svg.append(s("line", { class: "tfc-cursor", x1: x(L), x2: x(L), y1: mt, y2: H - mb }));
    svg.append(s("circle", { class: "tfc-marker", cx: x(L), cy: y(hL), r: 4.5 }));
  }

  const schedule = batched(draw);
  const events = ["w_hh_index", "w_xh_index", "length", "curves", "attention_alpha"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
