// Transformer 架构全景图（anywidget 前端）。方块、参数个数、形状都由 Python 算好（tfcourse.anatomy.model_blocks），
// 这里只负责摆放（论文图 1：左编码器、右解码器，数据自下而上）、选择和显示。

const GROUPS = [
  { key: "encoder", title: "编码器 Encoder", input: "输入 Inputs（源序列）", output: "" },
  { key: "decoder", title: "解码器 Decoder", input: "输出 Outputs（右移一位）", output: "输出概率 Output Probabilities" },
];

// 千位分隔符（不依赖浏览器的区域设置）：2099712 → "2,099,712"
const thousands = (n) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-archmap" });
  el.append(root);
  let buttons = new Map();          // id → 方块按钮
  let detail = null, diagram = null, links = null;
  const resize = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => { drawLinks(); alignDetail(model.get("selected") || ""); });

  const blocks = () => model.get("blocks") || [];
  const select = (id) => commit(model, { selected: id });

  function box(b, order) {
    const btn = h("button", { type: "button", class: `am-block am-kind-${b.kind || "other"}`, "data-block": b.id,
      "aria-pressed": "false", title: b.name ? `${b.label}（${b.name}）` : b.label });
    btn.append(h("span", { class: "am-label", text: b.label }));
    btn.append(h("span", { class: "am-meta", text: `${thousands(b.params)} 参数` }));
    if (b.shape) btn.append(h("span", { class: "am-shape", text: b.shape }));
    if (b.id === "dec.cross_attn") btn.append(h("span", { class: "am-meta", text: "K、V ← 编码器输出" }));
    btn.addEventListener("click", () => select(b.id));
    btn.addEventListener("keydown", (ev) => {          // ↑↓：沿数据流移动到上一个 / 下一个方块
      const step = ev.key === "ArrowUp" ? 1 : ev.key === "ArrowDown" ? -1 : 0;
      const next = order[order.indexOf(b.id) + step];
      if (!step || next === undefined) return;
      ev.preventDefault();
      buttons.get(next).focus();
      select(next);
    });
    buttons.set(b.id, btn);
    return btn;
  }

  const arrow = () => h("div", { class: "am-arrow", "aria-hidden": "true" });

  // 一栏：按数据流动的顺序放进 DOM（Tab 键也按这个顺序走），CSS 用 column-reverse 让它自下而上显示。
  function column(g) {
    const list = blocks().filter((b) => b.group === g.key);
    const order = list.map((b) => b.id);
    const col = h("div", { class: `am-col am-${g.key}`, role: "group", "aria-label": `${g.title}（自下而上）` });
    col.append(h("div", { class: "am-io", text: g.input }));
    for (let i = 0; i < list.length;) {
      col.append(arrow());
      const n = list[i].repeat;
      if (n > 1) {                                       // 连续的层内方块：框起来，标 ×N
        const frame = h("div", { class: "am-frame", title: `这一层重复 ${n} 次（n_layers = ${n}）` });
        let first = true;
        for (; i < list.length && list[i].repeat === n; i++) {
          if (!first) frame.append(arrow());
          frame.append(box(list[i], order));
          first = false;
        }
        frame.append(h("span", { class: "am-repeat", "aria-label": `重复 ${n} 层`,
          text: g.key === "encoder" ? `${n}×` : `×${n}` }));
        col.append(frame);
      } else {
        col.append(box(list[i], order));
        i += 1;
      }
    }
    if (g.output && list.length) col.append(arrow(), h("div", { class: "am-io", text: g.output }));
    return h("div", { class: "am-colwrap" }, h("div", { class: "am-coltitle", text: g.title }), col);
  }

  function build() {
    buttons = new Map();
    root.replaceChildren();
    const title = model.get("title");
    if (title) root.append(h("div", { class: "tfc-title", text: title }));
    root.append(h("div", { class: "tfc-readout am-total" }, "参数总数 ",
      h("strong", { "data-testid": "am-total", text: thousands(model.get("total_params")) }),
      `（${blocks().length} 个方块；框里的层重复 N 次）`));
    links = s("svg", { class: "am-links", "aria-hidden": "true" });
    diagram = h("div", { class: "am-diagram" }, ...GROUPS.map(column), links);
    detail = h("div", { class: "am-detail", "aria-live": "polite", "data-testid": "am-detail" });
    root.append(h("div", { class: "am-layout" }, diagram, detail));
    root.append(h("div", { class: "tfc-note", text: "数据自下而上流动。点击方块（或用 Tab 移到方块上按 Enter，↑↓ 沿数据流移动）查看它做什么、有多少参数、输出什么形状。" }));
    if (resize) {                                        // 任何方块的大小变了（字体载入、窗口变窄），重画连线
      resize.disconnect();
      resize.observe(diagram);
      for (const btn of buttons.values()) resize.observe(btn);
    }
    update();
    requestAnimationFrame(drawLinks);
  }

  // 编码器的输出 memory → 解码器每一层的交叉注意力（论文图里从左栏顶上拐进右栏的那根线）
  function drawLinks() {
    if (!diagram || !links) return;
    links.replaceChildren();
    const enc = blocks().filter((b) => b.group === "encoder");
    const from = enc.length ? buttons.get(enc[enc.length - 1].id) : null;
    const to = buttons.get("dec.cross_attn");
    if (!from || !to) return;
    const base = diagram.getBoundingClientRect();
    const a = from.getBoundingClientRect(), b = to.getBoundingClientRect();
    if (!a.width || !b.width) return;                    // 还没排版（例如在隐藏的标签页里）
    links.setAttribute("width", String(base.width));
    links.setAttribute("height", String(base.height));
    const x0 = a.left + a.width / 2 - base.left, y0 = a.top - base.top;
    const y1 = y0 - 16;
    const encCol = from.closest(".am-col");
    const xm = (encCol.getBoundingClientRect().right + to.closest(".am-col").getBoundingClientRect().left) / 2 - base.left;
    const yc = b.top + b.height / 2 - base.top, xe = b.left - base.left - 2;
    links.append(s("polyline", { class: "am-link", points: `${x0},${y0} ${x0},${y1} ${xm},${y1} ${xm},${yc} ${xe - 7},${yc}` }));
    links.append(s("polygon", { class: "am-link-head", points: `${xe},${yc} ${xe - 8},${yc - 5} ${xe - 8},${yc + 5}` }));
    links.append(s("text", { x: x0 + 6, y: y1 - 5, class: "am-link-text" }, "memory"));
  }

  function update() {
    const list = blocks();
    const id = model.get("selected") || "";
    const hadFocus = root.contains(document.activeElement);
    for (const [bid, btn] of buttons) {
      btn.classList.toggle("selected", bid === id);
      btn.setAttribute("aria-pressed", String(bid === id));
    }
    const b = list.find((x) => x.id === id);
    detail.replaceChildren();
    requestAnimationFrame(() => alignDetail(id));
    if (!b) {
      detail.append(h("div", { class: "am-hint", text: "还没有选择：点击图中任一方块。" }));
      return;
    }
    const total = model.get("total_params");
    const share = total > 0 ? (b.total_params / total) * 100 : 0;
    detail.append(h("div", { class: "am-detail-label", "data-testid": "am-label", text: b.label }));
    detail.append(h("p", { class: "am-detail-text", "data-testid": "am-text", text: b.detail }));
    const params = b.repeat > 1
      ? `每层 ${thousands(b.params)} × ${b.repeat} = ${thousands(b.total_params)}`
      : thousands(b.total_params);
    detail.append(h("div", { class: "am-row" }, "参数：",
      h("strong", { "data-testid": "am-params", text: params }),
      "（", h("span", { "data-testid": "am-share", text: `占全部 ${share.toFixed(1)}%` }), "）"));
    if (b.shape) {
      detail.append(h("div", { class: "am-row" }, "输出形状：", h("code", { "data-testid": "am-shape", text: b.shape })));
    }
    if (b.name) {
      const where = b.repeat > 1 ? `（第 0 层；共 ${b.repeat} 层，结构相同）` : "";
      detail.append(h("div", { class: "am-row" }, "模块：", h("code", { "data-testid": "am-name", text: b.name }), where));
    }
    if (hadFocus && !root.contains(document.activeElement)) buttons.get(id)?.focus();
  }

  // 宽屏（说明面板在图的右边）：把面板移到所选方块的高度。图有一千多像素高，
  // 面板若一直停在顶上，点底部或顶部的方块时说明可能在窗口外；跟着方块走，点哪里就在哪里看到说明。
  function alignDetail(id) {
    if (!detail || !diagram) return;
    const layout = detail.parentElement;
    if (!layout || getComputedStyle(layout).display !== "grid") { detail.style.marginTop = ""; return; }
    const btn = buttons.get(id);
    if (!btn) { detail.style.marginTop = "0px"; return; }
    const top = btn.getBoundingClientRect().top - diagram.getBoundingClientRect().top;
    const room = diagram.offsetHeight - detail.offsetHeight;
    detail.style.marginTop = `${Math.round(clamp(top - 8, 0, Math.max(room, 0)))}px`;
  }

  const rebuild = batched(build);
  const refresh = batched(update);
  model.on("change:blocks", rebuild);
  model.on("change:title", rebuild);
  model.on("change:total_params", rebuild);
  model.on("change:selected", refresh);
  build();
  return () => {
    model.off("change:blocks", rebuild);
    model.off("change:title", rebuild);
    model.off("change:total_params", rebuild);
    model.off("change:selected", refresh);
    if (resize) resize.disconnect();
  };
}

export default { render };
