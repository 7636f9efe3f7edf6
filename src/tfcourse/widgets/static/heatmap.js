// 可点击的注意力热力图（anywidget 前端）。权重由 Python 算好传进来，这里只负责显示与选择。
// 不透明的色阶，文字取黑或白中对比度更高的一种。亮色主题：浅蓝 → 深蓝（越深越大）；
// 暗色主题：深灰蓝 → 亮蓝（越亮越大），格子不会在暗色页面上亮成一片白。
const SCALES = { light: [[239, 246, 255], [30, 64, 175]], dark: [[30, 36, 48], [96, 165, 250]] };
function cellColours(t, dark) {
  const [LOW, HIGH] = SCALES[dark ? "dark" : "light"];
  const rgb = LOW.map((c, i) => Math.round(c + (HIGH[i] - c) * clamp(t, 0, 1)));
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const L = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
  // 纯白或纯黑里对比度更高的一种：任何底色上都至少有 √21 ≈ 4.58:1（WCAG AA 要求 4.5:1；#111 在中间色调上不够）
  const text = (1.05 / (L + 0.05)) >= ((L + 0.05) / 0.05) ? "#fff" : "#000";
  return { background: `rgb(${rgb.join(", ")})`, color: text };
}

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-heatmap" + (model.get("live_model") ? " tfc-heatmap-live" : "") });
  el.append(root);
  const stopLive = model.get("live_model") ? liveReview(model, root) : () => {};
  let focusKey = null; // 最近一次交互的位置：重绘后把键盘焦点放回那里
  let scroller = null, pending = null;  // 表格的横向滚动盒子；还没排版时等它有了宽度再把选中的格子滚进来
  const sizer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => { if (pending && pending()) pending = null; });
  function draw() {
    const hadFocus = root.contains(document.activeElement);
    const dark = isDark();
    const maps = model.get("weights") || [];
    const labels = model.get("labels") || [];
    const d = model.get("decimals");
    const m = Math.min(Math.max(model.get("map_index"), 0), Math.max(maps.length - 1, 0));
    // 每张图可以有自己的词（几条长短不一的评论各一张图）；没有时各图共用 q_tokens / k_tokens
    const perQ = model.get("map_q_tokens") || [];
    const perK = model.get("map_k_tokens") || [];
    const qTok = (perQ.length ? perQ[m] : model.get("q_tokens")) || [];
    const kTok = (perK.length ? perK[m] : model.get("k_tokens")) || [];
    const W = maps[m] || [];
    const row = model.get("row");
    const col = model.get("col");
    const masks = model.get("mask") || [];
    const M = masks[m] || null;                      // 这张图的掩码（true = 可以看）；没有掩码时为 null
    const blocked = (i, j) => M !== null && M[i] && M[i][j] === false;
    let maxW = 0;
    for (const r of W) for (const v of r) maxW = Math.max(maxW, v);
    if (maxW <= 0) maxW = 1;
    const showNumbers = kTok.length <= 12;
    const fmt = (v) => Number(v).toFixed(d);

    root.replaceChildren();
    const title = model.get("title");
    if (title && !model.get("live_model")) root.append(h("div", { class: "tfc-title", text: title }));   // 读者文字版：标题在文本框上面

    if (maps.length > 1) {
      const sel = h("select", { "aria-label": "选择要看的注意力图", class: "tfc-map-select" });
      labels.forEach((lab, i) => {
        const opt = h("option", { value: String(i), text: lab });
        if (i === m) opt.selected = true;
        sel.append(opt);
      });
      sel.addEventListener("change", () => {
        focusKey = "select";
        const v = Number(sel.value), changes = { map_index: v };
        if (perQ.length && (row >= (perQ[v] || []).length || col >= (perK[v] || []).length)) {
          changes.row = -1; changes.col = -1;               // 新图更小：原来的选择不在图里了
        }
        commit(model, changes);
      });
      root.append(h("div", { class: "tfc-control" }, h("label", { text: "注意力图：" }), sel));
    }

    const table = h("table", { class: "tfc-grid-table" + (showNumbers ? "" : " tfc-compact"), role: "grid",
      "aria-label": `注意力权重热力图：行是${model.get("query_axis")}，列是${model.get("key_axis")}` });
    // 左上角的轴名不许撑宽行首那一列：文字放进宽度为 0、最小宽度 100% 的盒子里，跟着行首的宽度折行（最多 3 行）。
    const axes = `${model.get("query_axis")} ＼ ${model.get("key_axis")}`;
    const head = h("tr", {}, h("th", { class: "tfc-axis-label", title: axes }, h("span", { text: axes })));
    kTok.forEach((k, j) => head.append(h("th", { scope: "col", class: j === col && row >= 0 ? "tfc-colpicked" : "", "data-col": String(j), text: k })));
    table.append(h("thead", {}, head));
    const body = h("tbody");
    const tooltip = h("div", { class: "tfc-tooltip", "aria-live": "polite", "data-testid": "hover" });
    const rovingRow = row >= 0 ? row : 0;
    const rovingCol = col >= 0 ? col : 0;

    W.forEach((weights, i) => {
      const tr = h("tr");
      const th = h("th", { scope: "row", class: "tfc-rowhead", tabindex: "-1", role: "rowheader",
        "aria-selected": String(i === row && col < 0), title: `查看查询「${qTok[i]}」这一行`, text: qTok[i] });
      th.dataset.row = String(i);
      th.addEventListener("click", () => { focusKey = `r${i}`; commit(model, { row: i, col: -1 }); });
      th.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); focusKey = `r${i}`; commit(model, { row: i, col: -1 }); }
        else if (ev.key === "ArrowRight") { ev.preventDefault(); focusKey = `c${i},0`; commit(model, { row: i, col: 0 }); }
      });
      tr.append(th);
      weights.forEach((w, j) => {
        const t = w / maxW;
        const off = blocked(i, j);
        const label = `查询「${qTok[i]}」→ 键「${kTok[j]}」：` + (off ? `被掩码屏蔽（权重 ${fmt(w)}）` : fmt(w));
        const td = h("td", {
          class: "tfc-cell" + (i === row ? " tfc-inrow" : "") + (off ? " tfc-masked" : ""), role: "gridcell",
          tabindex: i === rovingRow && j === rovingCol ? "0" : "-1",
          "aria-selected": String(i === row && j === col), "aria-label": label, title: label,
          text: off ? "×" : showNumbers ? fmt(w) : "",
        });
        td.dataset.row = String(i);
        td.dataset.col = String(j);
        if (!off) {
          const colours = cellColours(t, dark);
          td.style.background = colours.background;
          td.style.color = colours.color;
        }
        td.addEventListener("mouseenter", () => { tooltip.textContent = label; });
        td.addEventListener("click", () => { focusKey = `c${i},${j}`; commit(model, { row: i, col: j }); });
        td.addEventListener("keydown", (ev) => {
          let [r, c] = [i, j];
          if (ev.key === "ArrowRight") c = Math.min(j + 1, kTok.length - 1);
          else if (ev.key === "ArrowLeft") c = j - 1;
          else if (ev.key === "ArrowDown") r = Math.min(i + 1, qTok.length - 1);
          else if (ev.key === "ArrowUp") r = Math.max(i - 1, 0);
          else if (ev.key !== "Enter" && ev.key !== " ") return;
          ev.preventDefault();
          if (c < 0) { focusKey = `r${r}`; commit(model, { row: r, col: -1 }); return; }
          focusKey = `c${r},${c}`;
          commit(model, { row: r, col: c });
        });
        tr.append(td);
      });
      body.append(tr);
    });
    table.append(body);
    root.append(h("div", { class: "tfc-axes" }, `行 = ${model.get("query_axis")}，列 = ${model.get("key_axis")}`));
    scroller = h("div", { class: "tfc-scroll", "data-testid": "heatmap-scroll" }, table);
    root.append(scroller);                                   // 很长的序列：表格在自己的盒子里横向滚动，不撑破页面
    root.append(tooltip);
    root.append(h("div", { class: "tfc-note", text: `颜色越${dark ? "亮" : "深"}权重越大（按本图最大权重 ${fmt(maxW)} 归一化）。` +
      (M ? "「×」是被掩码屏蔽的位置：这个查询不许看这个键。" : "") + "点击格子或行首的词；方向键也可以移动。" }));

    const detail = h("div", { class: "tfc-detail", "aria-live": "polite" });
    if (row >= 0 && row < W.length) {
      const rowW = W[row];
      const sum = rowW.reduce((a, b) => a + b, 0);
      const read = h("div", { class: "tfc-readout", "data-testid": "selection" });
      if (col >= 0 && col < rowW.length) {
        const dup = kTok.filter((k) => k === kTok[col]).length > 1;    // 两列同名（如两个 <pad>）：写出第几列
        read.append(`选中：查询「${qTok[row]}」→ 键「${kTok[col]}」${dup ? `（第 ${col + 1} 列）` : ""}的权重 = `,
          h("strong", { "data-testid": "selected-weight", text: fmt(rowW[col]) }),
          blocked(row, col) ? "（被掩码屏蔽）" : "");
      } else {
        read.append(`选中查询「${qTok[row]}」这一行：它对各个键的权重（和为 ${fmt(sum)}）`);
      }
      detail.append(read);
      const bars = h("div", { class: "tfc-bars", role: "list", "aria-label": `查询「${qTok[row]}」的注意力分布` });
      rowW.forEach((w, j) => {
        const fill = h("div", { class: "tfc-bar-fill" });
        fill.style.width = `${Math.max(0, Math.min(1, w / maxW)) * 100}%`;
        bars.append(h("div", { class: "tfc-bar-row" + (j === col ? " tfc-picked" : ""), role: "listitem",
          "aria-current": j === col ? "true" : "false" },
          h("span", { class: "tfc-bar-name", text: kTok.filter((k) => k === kTok[j]).length > 1 ? `${kTok[j]}·${j + 1}` : kTok[j] }),
          h("div", { class: "tfc-bar-track" }, fill),
          h("span", { class: "tfc-bar-value", text: blocked(row, j) ? `${fmt(w)} ×` : fmt(w) })));
      });
      detail.append(bars);
    } else {
      detail.append(h("div", { class: "tfc-readout", "data-testid": "selection", text: "还没有选择：点击任一格子，查看这个查询对所有键的权重。" }));
    }
    root.append(detail);

    // 选中的格子滚进表格盒子的可见范围（打开时和每次选择后；只滚这个盒子，不滚整页）
    const picked = row >= 0 ? root.querySelector(col >= 0 ? `td[data-row="${row}"][data-col="${col}"]` : `th[data-row="${row}"]`) : null;
    if (picked) {
      const reveal = () => revealInScroller(scroller, picked);
      pending = reveal() ? null : reveal;
      if (pending && sizer) sizer.observe(scroller);
    }

    if (focusKey && hadFocus) {
      let target = null;
      if (focusKey === "select") target = root.querySelector("select");
      else if (focusKey[0] === "r") target = root.querySelector(`th[data-row="${focusKey.slice(1)}"]`);
      else {
        const [r, c] = focusKey.slice(1).split(",");
        target = root.querySelector(`td[data-row="${r}"][data-col="${c}"]`);
      }
      if (target) target.focus();
    }
  }

  const events = ["weights", "mask", "labels", "map_index", "row", "col", "q_tokens", "k_tokens", "map_q_tokens",
    "map_k_tokens", "title", "decimals"];
  const schedule = batched(draw);           // 一次选择会同时改 row 和 col
  for (const name of events) model.on(`change:${name}`, schedule);
  const stopTheme = onThemeChange(schedule);  // 格子的颜色由这里算：换主题时重画
  draw();
  return () => {
    for (const name of events) model.off(`change:${name}`, schedule);
    stopTheme();
    stopLive();
    if (sizer) sizer.disconnect();
  };
}

// ReviewAttention（第 14 章）：热力图上面一个文本框。读者每改一次，课程的 cls-bert 在浏览器里重读这条评论：
// 好评的概率，和最后一层的注意力（与 Python 的 widgets.heatmap.head_maps 相同的图：各头平均 + 每个头，
// 每张图最上面一行是各查询行的平均）。打开时显示 Python 算好的结果，改动之前不下载权重。
function headMaps(att) {
  const H = att.weights.length, T = att.tokens.length;
  const avg = Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) =>
    att.weights.reduce((s, w) => s + w[i][j], 0) / H));
  const withMean = (m) => [Array.from({ length: T }, (_, j) => m.reduce((s, r) => s + r[j], 0) / T), ...m];
  return { labels: [`${H} 个头平均`, ...att.weights.map((_, k) => `第 ${k + 1} 头`)],
    maps: [avg, ...att.weights].map(withMean) };
}

function headsOfAllLayers(att) {                          // bert-zh：每层每个头一张图，与 AttentionHeatmap 的 (L, H, T, T) 相同
  const labels = [], maps = [];
  att.weights.forEach((layer, l) => layer.forEach((w, k) => { labels.push(`第 ${l + 1} 层 · 第 ${k + 1} 头`); maps.push(w); }));
  return { labels, maps };
}

function liveReview(model, root) {
  const name = model.get("live_model"), review = name === "cls-bert";   // 否则是 bert-zh 的一句话（第 4 章）
  const box = h("div", { class: "tfc-widget tfc-live" });
  const input = h("textarea", { class: "tfc-live-input", rows: "2",
    "aria-label": review ? "你自己的评论（改动后模型立即重读）" : "你自己的句子（改动后模型立即重读）",
    placeholder: review ? "写一条评论，例如：房间很干净，就是隔音太差" : "写一句话，例如：我昨天在书店买了一本书" });
  input.value = model.get("live_text");
  const verdict = h("div", { class: "tfc-live-verdict", "aria-live": "polite", "data-testid": "live-verdict" });
  const notes = h("div", { class: "tfc-note", "data-testid": "live-notes" });
  if (model.get("title")) box.append(h("div", { class: "tfc-title", text: model.get("title") }));
  box.append(h("label", { class: "tfc-live-label", text: review ? "你自己的评论：" : "你自己的句子：" }), input, verdict, notes);
  root.before(box);

  function show(p, noteList, status) {
    if (!review) { notes.textContent = [status, ...noteList].filter(Boolean).join(" "); return; }
    const fill = h("div", { class: "tfc-bar-fill" });
    fill.style.width = `${(p * 100).toFixed(1)}%`;
    verdict.replaceChildren(
      h("span", { text: "P(好评) = " }), h("strong", { "data-testid": "live-prob", text: p.toFixed(3) }),
      h("span", { text: `：判为${p >= 0.5 ? "好评" : "差评"}` }),
      h("div", { class: "tfc-bar-track", role: "img", "aria-label": `好评的概率 ${(p * 100).toFixed(1)}%` }, fill));
    notes.textContent = [status, ...noteList].filter(Boolean).join(" ");
  }
  show(model.get("live_prob"), model.get("live_notes") || [], "");

  let latest = 0, frame = null;
  async function recompute() {
    frame = null;
    const text = input.value, mine = ++latest;
    if (!text) {
      verdict.replaceChildren(h("span", { text: review ? "先写一条评论：至少一个字。" : "先写一句话：至少一个字。" }));
      notes.textContent = review ? "下面的热力图还是上一条评论的。" : "下面的热力图还是上一句的。";
      return;
    }
    const m = await courseModelShown(model, name, notes);
    if (!m || mine !== latest) return;                           // 读者又改了：只画最新的那一次
    const att = m.attention(text);
    const { labels, maps } = review ? headMaps(att) : headsOfAllLayers(att);
    const q = review ? ["（平均）", ...att.tokens] : att.tokens;
    const info = describeInput(text, model.get("live_limit"), m.known);
    const row = model.get("row"), col = model.get("col");
    verdict.replaceChildren();
    commit(model, {
      live_text: text, live_prob: review ? att.p_positive : -1, live_notes: info.notes, labels, weights: maps,
      map_q_tokens: maps.map(() => q), map_k_tokens: maps.map(() => att.tokens),
      row: Math.min(row, q.length - 1), col: col >= att.tokens.length ? -1 : col,
    });
    show(att.p_positive, info.notes, `${name} 在你的浏览器里读了这 ${att.tokens.length - 2} 个字。`);
  }
  const onInput = () => { if (frame === null) frame = requestAnimationFrame(recompute); };
  input.addEventListener("input", onInput);
  return () => { input.removeEventListener("input", onInput); box.remove(); };
}

export default { render };
