// 全书知识地图（anywidget 前端）。章节、各节、模块全部由 Python 从仓库里读好；这里只摆放、选择、高亮。

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-kmap" });
  el.append(root);
  root.append(h("div", { class: "tfc-title", text: "全书知识地图：点一章看它讲了什么、用到课程包的哪些模块；点模块看哪些章用到它" }));
  const layout = h("div", { class: "km-layout" });
  const grid = h("div", { class: "km-parts", "data-testid": "km-parts" });
  const detail = h("div", { class: "km-detail", "aria-live": "polite", "data-testid": "km-detail" });
  const modbar = h("div", { class: "tfc-readout km-modbar", "data-testid": "km-modbar" });
  layout.append(grid, detail);
  root.append(layout, modbar);

  const numbers = () => model.get("chapters").map((c) => c.number);
  const chapterOf = (n) => model.get("chapters").find((c) => c.number === n);
  const uses = (c, mod) => c.modules.some((m) => m.name === mod);
  const short = (name) => name.replace(/^tfcourse\./, "");

  // 章号夹到地图上最近的一章（与 Python 端的规则相同）
  function clampChapter(v) {
    const ns = numbers();
    if (!ns.length || ns.includes(v)) return v;
    return ns.reduce((best, n) => (Math.abs(n - v) < Math.abs(best - v) ? n : best), ns[0]);
  }

  function moduleChip(name, introducedHere) {
    const info = model.get("modules")[name] || { summary: "", introduced: 0 };
    const b = h("button", {
      type: "button", class: "km-mod" + (introducedHere ? " km-new" : ""), "data-module": name,
      title: info.summary, "aria-pressed": String(model.get("module") === name),
      text: (introducedHere ? "★ " : "") + short(name),
    });
    b.addEventListener("click", () => commit(model, { module: model.get("module") === name ? "" : name }));
    return b;
  }

  function draw() {
    const sel = clampChapter(model.get("selected"));
    const mod = model.get("module");
    const chapters = model.get("chapters");
    grid.replaceChildren(...model.get("parts").filter((p) => p.chapters.length).map((p) => {
      const box = h("div", { class: "km-part" }, h("div", { class: "km-caption", text: p.caption }));
      for (const n of p.chapters) {
        const c = chapterOf(n);
        if (!c) continue;
        const cls = ["km-ch"];
        if (n === sel) cls.push("selected");
        if (mod && uses(c, mod)) cls.push("km-lit");
        if (mod && !uses(c, mod)) cls.push("km-dim");
        const b = h("button", { type: "button", class: cls.join(" "), "data-chapter": String(n),
          "aria-pressed": String(n === sel) },
          h("span", { class: "km-num", text: chapterOf(n).label || `第 ${n} 章` }), h("span", { class: "km-name", text: c.title }));
        b.addEventListener("click", () => commit(model, { selected: n }));
        box.append(b);
      }
      return box;
    }));

    const c = chapterOf(sel) || chapters[0];
    if (!c) { detail.replaceChildren(); return; }
    const intro = new Set(c.introduces);
    const parts = [
      h("div", { class: "km-head" }, h("a", { href: c.url, "data-testid": "km-link", text: `${c.label || `第 ${c.number} 章`}　${c.title}` })),
      h("div", { class: "km-label", text: "本章各节" }),
      h("ol", { class: "km-sections", "data-testid": "km-sections" }, ...c.sections.map((s) => h("li", { text: s }))),
      h("div", { class: "km-label", text: "用到的课程包模块（★ 本章引入）" }),
    ];
    const mods = h("div", { class: "km-mods", "data-testid": "km-mods" });
    for (const m of c.modules) {
      const row = h("div", { class: "km-modrow" }, moduleChip(m.name, intro.has(m.name)));
      if (m.names.length) row.append(h("span", { class: "km-names", text: m.names.join("、") }));
      mods.append(row);
    }
    const extra = c.introduces.filter((n) => !c.modules.some((m) => m.name === n));
    for (const n of extra) mods.append(h("div", { class: "km-modrow" }, moduleChip(n, true),
      h("span", { class: "km-names", text: "（由本章用到的模块间接导入）" })));
    if (!c.modules.length && !extra.length) mods.append(h("div", { class: "tfc-note", text: "这一章没有导入课程包的模块。" }));
    parts.push(mods);
    detail.replaceChildren(...parts);

    if (mod) {
      const info = model.get("modules")[mod] || { summary: "", introduced: 0 };
      const users = chapters.filter((x) => uses(x, mod)).map((x) => x.number);
      const clear = h("button", { type: "button", class: "km-clear", "data-testid": "km-clear", text: "取消高亮" });
      clear.addEventListener("click", () => commit(model, { module: "" }));
      modbar.replaceChildren(h("strong", { text: mod }), `：${info.summary}`,
        info.introduced ? `。${info.introduced > 16 ? `附录 ${String.fromCharCode(48 + info.introduced)}` : `第 ${info.introduced} 章`}引入` : "", h("br"),
        "用到它的章：", h("span", { "data-testid": "km-users", text: users.length ? users.map((n) => (n > 16 ? chapterOf(n).label : String(n))).join("、") : "（没有）" }), " ", clear);
      modbar.hidden = false;
    } else {
      modbar.replaceChildren("点一个模块，用到它的各章会在上面亮起来。");
    }
  }

  const schedule = batched(draw);
  const events = ["parts", "chapters", "modules", "selected", "module"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
