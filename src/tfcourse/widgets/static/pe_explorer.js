// 位置编码探索器（anywidget 前端）。编码表与点积由 Python 预先算好，这里只查表和画图。

// 与第 5 章静态图相同的发散色阶 matplotlib "RdBu_r"（vmin = −1，vmax = 1）：−1 → 蓝，0 → 白，+1 → 红。
// 下面是 ColorBrewer RdBu 的 11 个色标（从 −1 到 +1），其间线性插值。
const RDBU_R = ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7",
  "#fddbc7", "#f4a582", "#d6604d", "#b2182b", "#67001f"].map((c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)));
// 暗色主题：同样是蓝 −1、红 +1，只是 0 取深灰，整张表不会在暗色页面上亮成一片白。
const DARK = [[67, 147, 195], [86, 120, 160], [38, 40, 46], [200, 110, 95], [230, 85, 75]];
function colour(v, dark) {
  const stops = dark ? DARK : RDBU_R;
  const x = ((clamp(v, -1, 1) + 1) / 2) * (stops.length - 1);
  const k = Math.min(Math.floor(x), stops.length - 2), f = x - k;
  return stops[k].map((c, i) => Math.round(c + (stops[k + 1][i] - c) * f));
}

// 坐标轴刻度：把 [0, n] 分成大约 4 段的"整"步长（1、2、5 × 10^k）
function niceStep(span) {
  const raw = span / 4, p = 10 ** Math.floor(Math.log10(raw || 1));
  return [1, 2, 5, 10].map((m) => m * p).find((st) => st >= raw) || p;
}

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-pe" });
  el.append(root);
  const T = () => model.get("max_len");
  const D = () => model.get("d_model");

  root.append(h("div", { class: "tfc-title", text: "正弦位置编码：每对维度是一根按自己速度转动的指针" }));
  const sliders = [
    rangeSlider(model, "position", "位置 p", 0, T() - 1, (v) => String(v)),
    rangeSlider(model, "pair", "维度对 i（第 2i、2i+1 维）", 0, D() / 2 - 1, (v) => `${v}（第 ${2 * v}、${2 * v + 1} 维）`),
  ];
  for (const sl of sliders) root.append(sl.row);
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite" });
  root.append(readout);
  const charts = h("div", { class: "tfc-charts" });
  root.append(charts);
  const canvas = h("canvas", { width: String(D()), height: String(T()), "data-testid": "pe-table",
    role: "img", "aria-label": "位置编码表：行是位置，列是维度；点击选择位置与维度对" });
  const tableNote = h("div", { class: "tfc-note", "data-testid": "pe-legend" });
  const tableBox = h("div", {}, tableNote, canvas);
  const W = 380, H = 190, ml = 40, mr = 10, mt = 20, mb = 34;
  const wave = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", style: "max-width:380px" });
  const dots = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", style: "max-width:380px" });
  charts.append(tableBox, h("div", {}, wave, dots));
  root.append(h("div", { class: "tfc-note", text: "曲线一：所选维度对随位置变化（蓝实线 sin，橙虚线 cos）。曲线二：PE(0)·PE(k) 随距离 k 的变化——它只取决于距离，与起点无关。" }));

  canvas.addEventListener("click", (ev) => {
    const r = canvas.getBoundingClientRect();
    const p = clamp(Math.floor(((ev.clientY - r.top) / r.height) * T()), 0, T() - 1);
    const col = clamp(Math.floor(((ev.clientX - r.left) / r.width) * D()), 0, D() - 1);
    commit(model, { position: p, pair: Math.floor(col / 2) });
  });

  function paintTable(p, i) {
    const dark = isDark();
    tableNote.textContent = `整张编码表（行 = 位置 p，列 = 维度；红 = +1，${dark ? "深灰" : "白"} = 0，蓝 = −1）：点击选择`;
    const ctx = canvas.getContext("2d");
    const pe = model.get("pe");
    const img = ctx.createImageData(D(), T());
    for (let r = 0; r < T(); r++) {
      for (let c = 0; c < D(); c++) {
        const rgb = colour(pe[r * D() + c], dark);
        const k = 4 * (r * D() + c);
        const hit = r === p || (c >> 1) === i;
        img.data[k] = hit ? rgb[0] * 0.55 : rgb[0];
        img.data[k + 1] = hit ? rgb[1] * 0.55 : rgb[1];
        img.data[k + 2] = hit ? rgb[2] * 0.55 : rgb[2];
        img.data[k + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
  }

  function axes(svg, xLabel, yLabel, y0, y1, fy, fx, xMax) {
    svg.append(s("line", { class: "tfc-axis", x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    svg.append(s("line", { class: "tfc-axis", x1: ml, x2: ml, y1: mt, y2: H - mb }));
    svg.append(s("text", { x: (ml + W - mr) / 2, y: H - 4, "text-anchor": "middle" }, xLabel));
    const st = niceStep(xMax);                                   // x 轴刻度：0、st、2st …（以及最后一个位置）
    const xt = [];
    for (let v = 0; v <= xMax; v += st) xt.push(v);
    if (xMax - xt[xt.length - 1] >= st / 2) xt.push(xMax);
    for (const v of xt) {
      svg.append(s("line", { class: "tfc-axis", x1: fx(v), x2: fx(v), y1: H - mb, y2: H - mb + 4 }));
      svg.append(s("text", { x: fx(v), y: H - mb + 15, "text-anchor": "middle", class: "tfc-xtick" }, String(v)));
    }
    svg.append(s("text", { x: ml, y: 12, "text-anchor": "start" }, yLabel));
    for (const v of [y0, (y0 + y1) / 2, y1]) {
      svg.append(s("line", { class: "tfc-grid", x1: ml, x2: W - mr, y1: fy(v), y2: fy(v) }));
      svg.append(s("text", { x: ml - 4, y: fy(v) + 4, "text-anchor": "end" }, Number(v.toFixed(1)).toString()));
    }
  }

  function draw() {
    const n = T(), d = D();
    const p = clamp(model.get("position"), 0, n - 1);
    const i = clamp(model.get("pair"), 0, d / 2 - 1);
    const vals = { position: p, pair: i };
    for (const sl of sliders) sl.sync(vals[sl.key]);
    const pe = model.get("pe");
    const base = model.get("base");
    const omega = Math.pow(base, -(2 * i) / d);
    const lambda = (2 * Math.PI) / omega;
    const sinV = pe[p * d + 2 * i], cosV = pe[p * d + 2 * i + 1];
    const dotV = model.get("dots")[p];
    readout.replaceChildren(
      `位置 p = ${p}，维度对 i = ${i}：角频率 ω = 1/${base}^(${2 * i}/${d}) = ${omega.toPrecision(4)}，波长 `,
      h("strong", { "data-testid": "wavelength", text: lambda.toFixed(2) }), " 个位置",
      h("br"),
      `PE[${p}, ${2 * i}] = sin(${p}·ω) = `, h("strong", { "data-testid": "pe-sin", text: sinV.toFixed(4) }),
      `，PE[${p}, ${2 * i + 1}] = cos(${p}·ω) = `, h("strong", { "data-testid": "pe-cos", text: cosV.toFixed(4) }),
      h("br"),
      `与位置 0 的点积 PE(0)·PE(${p}) = `, h("strong", { "data-testid": "dot", text: dotV.toFixed(3) }),
      `（自己和自己是 ${model.get("dots")[0].toFixed(1)}）`
    );
    paintTable(p, i);

    const x = (k) => ml + (k / Math.max(n - 1, 1)) * (W - ml - mr);
    wave.replaceChildren();
    const fy = (v) => mt + (1 - (v + 1) / 2) * (H - mt - mb);
    axes(wave, "位置 p", `第 ${i} 对维度的取值`, -1, 1, fy, x, n - 1);
    const sinPts = [], cosPts = [];
    for (let k = 0; k < n; k++) {
      sinPts.push(`${x(k).toFixed(1)},${fy(pe[k * d + 2 * i]).toFixed(1)}`);
      cosPts.push(`${x(k).toFixed(1)},${fy(pe[k * d + 2 * i + 1]).toFixed(1)}`);
    }
    wave.append(s("polyline", { class: "tfc-curve", points: sinPts.join(" ") }));
    wave.append(s("polyline", { class: "tfc-ref", points: cosPts.join(" ") }));
    wave.append(s("line", { class: "tfc-cursor", x1: x(p), x2: x(p), y1: mt, y2: H - mb }));
    wave.append(s("circle", { class: "tfc-marker", cx: x(p), cy: fy(sinV), r: 4 }));
    wave.setAttribute("aria-label", `第 ${i} 对维度：位置 ${p} 处 sin = ${sinV.toFixed(4)}，cos = ${cosV.toFixed(4)}`);

    dots.replaceChildren();
    const dv = model.get("dots");
    const lo = Math.min(0, ...dv), hi = Math.max(...dv);
    const gy = (v) => mt + (1 - (v - lo) / (hi - lo || 1)) * (H - mt - mb);
    axes(dots, "距离 k", "PE(0)·PE(k)", lo, hi, gy, x, n - 1);
    dots.append(s("polyline", { class: "tfc-curve", points: dv.map((v, k) => `${x(k).toFixed(1)},${gy(v).toFixed(1)}`).join(" ") }));
    dots.append(s("line", { class: "tfc-cursor", x1: x(p), x2: x(p), y1: mt, y2: H - mb }));
    dots.append(s("circle", { class: "tfc-marker", cx: x(p), cy: gy(dotV), r: 4 }));
    dots.setAttribute("aria-label", `点积随距离变化：k = ${p} 时为 ${dotV.toFixed(3)}`);
  }

  const schedule = batched(draw);
  const events = ["position", "pair", "pe", "dots", "max_len", "d_model", "base"];
  for (const name of events) model.on(`change:${name}`, schedule);
  const stopTheme = onThemeChange(schedule);   // 编码表的颜色由这里算：换主题时重画
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); stopTheme(); };
}

export default { render };
