// 缩放探索器（anywidget 前端）。每个 d_k、缩放与否的统计量都由 Python 预先算好，这里只查表和画图。

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-scaling" });
  el.append(root);
  const uid = Math.random().toString(36).slice(2, 8);
  const dVals = () => model.get("d_values");

  root.append(h("div", { class: "tfc-title", text: "为什么要除以 √d_k：拖动 d_k，切换缩放，看 softmax 和梯度怎么变" }));
  const slider = rangeSlider(model, "d_index", "向量维数 d_k", 0, dVals().length - 1, (j) => String(dVals()[j]));
  root.append(slider.row);
  const box = h("input", { type: "checkbox", id: `tfc-s-${uid}`, "data-testid": "scaled" });
  box.addEventListener("change", () => commit(model, { scaled: box.checked }));
  root.append(h("div", { class: "tfc-control" }, h("label", { for: `tfc-s-${uid}`, text: "打分除以 √d_k（缩放）" }), box));
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite" });
  root.append(readout);
  const charts = h("div", { class: "tfc-charts" });
  root.append(charts);
  const W = 360, H = 210, ml = 44, mr = 20, mt = 22, mb = 36;
  const bars = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", style: "max-width:360px" });
  const lines = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", style: "max-width:360px" });
  charts.append(bars, lines);
  root.append(h("div", { class: "tfc-note", text: "柱状图：同一个查询对 16 个键的 softmax 权重（q、k 各分量取自标准正态分布）。折线图：传到查询 q 的梯度 ‖∂L/∂q‖ 小于 0.01（几乎学不到东西）的查询所占比例；蓝色实线为缩放后，橙色虚线为不缩放。" }));

  function axes(svg, xLabel, yLabel) {
    svg.append(s("line", { class: "tfc-axis", x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    svg.append(s("line", { class: "tfc-axis", x1: ml, x2: ml, y1: mt, y2: H - mb }));
    svg.append(s("text", { x: (ml + W - mr) / 2, y: H - 4, "text-anchor": "middle" }, xLabel));
    svg.append(s("text", { x: ml, y: 12, "text-anchor": "start" }, yLabel));
  }

  function draw() {
    const ds = dVals();
    const j = clamp(model.get("d_index"), 0, ds.length - 1);
    const scaled = !!model.get("scaled");
    const i = scaled ? 1 : 0;
    slider.sync(j);
    box.checked = scaled;
    const v = model.get("var_dot")[j];
    const mw = model.get("max_weight")[i][j];
    const ent = model.get("entropy")[i][j];
    const g = model.get("grad_norm")[i][j];
    const qMed = model.get("q_grad_median")[i][j];
    const small = model.get("q_grad_small")[i][j];
    const ex = model.get("example")[i][j];
    const n = ex.length;
    readout.replaceChildren(
      `d_k = ${ds[j]}：点积 q·k 的方差实测 `, h("strong", { "data-testid": "var-dot", text: v.toFixed(1) }),
      `（理论值 ${ds[j]}）`, scaled ? `；除以 √d_k = ${Math.sqrt(ds[j]).toFixed(2)} 后方差回到约 1。` : "；没有缩放。",
      h("br"),
      "每行最大权重平均 ", h("strong", { "data-testid": "max-weight", text: mw.toFixed(3) }),
      `，熵 `, h("strong", { "data-testid": "entropy", text: ent.toFixed(3) }),
      `（均匀分布是 ln ${n} = ${Math.log(n).toFixed(3)}）；softmax 雅可比的大小 `,
      h("strong", { "data-testid": "grad-norm", text: g.toFixed(3) }), "。",
      h("br"),
      "传到查询 q 的梯度：中位数 ", h("strong", { "data-testid": "q-grad-median", text: qMed.toFixed(4) }),
      "，几乎为 0（< 0.01）的查询占 ", h("strong", { "data-testid": "q-grad-small", text: `${(small * 100).toFixed(1)}%` }), "。"
    );

    // 左图：一个样本的权重柱状图（纵轴固定 0–1，尖锐与否一目了然）
    bars.replaceChildren();
    axes(bars, "键的编号", "权重");
    const bw = (W - ml - mr) / n;
    const y = (val) => mt + (1 - val) * (H - mt - mb);
    for (const t of [0, 0.5, 1]) {
      bars.append(s("line", { class: "tfc-grid", x1: ml, x2: W - mr, y1: y(t), y2: y(t) }));
      bars.append(s("text", { x: ml - 5, y: y(t) + 4, "text-anchor": "end" }, t.toFixed(1)));
    }
    ex.forEach((w, k) => {
      bars.append(s("rect", { class: "tfc-bar", x: ml + k * bw + 1, y: y(w), width: Math.max(bw - 2, 1), height: Math.max(H - mb - y(w), 0) }));
      if (k % 5 === 0) bars.append(s("text", { x: ml + (k + 0.5) * bw, y: H - mb + 13, "text-anchor": "middle" }, String(k + 1)));
    });
    bars.setAttribute("aria-label", `一个样本的权重：最大 ${Math.max(...ex).toFixed(3)}`);

    // 右图：收不到梯度的查询比例随 d_k（对数刻度）变化，两条线 + 当前位置
    lines.replaceChildren();
    axes(lines, "d_k（对数刻度）", "‖∂L/∂q‖ < 0.01 的比例");
    const fr = model.get("q_grad_small");
    const x = (k) => ml + (k / Math.max(ds.length - 1, 1)) * (W - ml - mr);
    const yy = (val) => mt + (1 - val) * (H - mt - mb);
    ds.forEach((d, k) => {
      if (k % 2 === 0) lines.append(s("text", { x: x(k), y: H - mb + 13, "text-anchor": "middle" }, String(d)));
    });
    for (const t of [0, 0.5, 1]) {
      lines.append(s("line", { class: "tfc-grid", x1: ml, x2: W - mr, y1: yy(t), y2: yy(t) }));
      lines.append(s("text", { x: ml - 5, y: yy(t) + 4, "text-anchor": "end" }, `${t * 100}%`));
    }
    lines.append(s("polyline", { class: "tfc-ref", points: fr[0].map((val, k) => `${x(k)},${yy(val)}`).join(" ") }));
    lines.append(s("polyline", { class: "tfc-curve", points: fr[1].map((val, k) => `${x(k)},${yy(val)}`).join(" ") }));
    lines.append(s("line", { class: "tfc-cursor", x1: x(j), x2: x(j), y1: mt, y2: H - mb }));
    lines.append(s("circle", { class: "tfc-marker", cx: x(j), cy: yy(small), r: 4.5 }));
    lines.setAttribute("aria-label", `d_k = ${ds[j]}，${scaled ? "缩放" : "不缩放"}时 ${(small * 100).toFixed(1)}% 的查询几乎收不到梯度`);
  }

  const schedule = batched(draw);
  const events = ["d_index", "scaled", "d_values", "var_dot", "max_weight", "entropy", "grad_norm", "q_grad_median", "q_grad_small", "example"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
