// 读者的开头，课程的 GPT 接着写（第 13 章 gpt-zh；第 15 章 gpt-zh-ctrl，加上 好评/差评 与引导强度 γ）。
// 一步一步看：点写出的任一个字，看那一步的候选、概率，温度、top-k、top-p 之后留下了几个。
// 打开时的结果由 Python 算好（widgets.live.generation_steps）；读者一改开头或滑块，模型就在浏览器里重写一遍
// （同一份 float16 权重、同一个随机数发生器，所以同样的设置得到同样的字）。

function render({ model, el }) {
  const name = model.get("live_model"), ctrl = name === "gpt-zh-ctrl";
  const root = h("div", { class: "tfc-widget tfc-live tfc-gen" });
  el.append(root);
  if (model.get("title")) root.append(h("div", { class: "tfc-title", text: model.get("title") }));
  const input = h("textarea", { class: "tfc-live-input", rows: "1", "aria-label": "开头（改动后模型重写）",
    placeholder: "写一个开头，例如：这家酒店" });
  input.value = model.get("prompt");
  root.append(h("label", { class: "tfc-live-label", text: "开头：" }), input);

  const sliders = [];
  const SAMPLING_ONLY = ["top_k", "top_p", "seed"];      // 温度 0（贪心）时不起作用：灰掉
  function slider(key, label, min, max, step, fmt) {
    const range = h("input", { type: "range", min: String(min), max: String(max), step: String(step), "aria-label": label,
      "data-testid": key });
    const out = h("output", {});
    const row = h("div", { class: "tfc-control" }, h("label", { text: label }), range, out);
    const sync = () => {
      range.value = String(model.get(key));
      const off = SAMPLING_ONLY.includes(key) && model.get("temperature") === 0;
      range.disabled = off;
      row.classList.toggle("tfc-off", off);
      out.textContent = off ? "贪心时不用" : fmt(model.get(key));
    };
    range.addEventListener("input", () => {
      commit(model, { [key]: clamp(Number(range.value), min, max) });
      sync();
      schedule();
    });
    sliders.push(sync);
    root.append(row);
  }
  if (ctrl) {
    const sel = h("select", { "aria-label": "要求", "data-testid": "label" });
    [["1", "<好评>"], ["0", "<差评>"]].forEach(([v, t]) => sel.append(h("option", { value: v, text: t })));
    sel.value = String(model.get("label"));
    sel.addEventListener("change", () => { commit(model, { label: Number(sel.value) }); schedule(); });
    root.append(h("div", { class: "tfc-control" }, h("label", { text: "控制 token：" }), sel));
    slider("guidance", "引导强度 γ", 1, 5, 0.5, (g) => (g === 1 ? "1（不引导）" : g.toFixed(1)));
  }
  slider("temperature", "温度 temperature", 0, 2, 0.1, (t) => (t === 0 ? "0 贪心" : t.toFixed(1)));
  slider("top_k", "top-k", 0, 50, 1, (k) => (k === 0 ? "不用" : String(k)));
  slider("top_p", "top-p", 0.5, 1, 0.05, (p) => (p >= 1 ? "不用" : p.toFixed(2)));
  slider("seed", "种子 seed", 0, 20, 1, (s) => String(s));

  const line = h("div", { class: "tfc-gen-line", role: "group", "aria-label": "模型写出的字：点一个字看那一步", "data-testid": "gen-line" });
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite", "data-testid": "gen-readout" });
  const bars = h("div", { class: "tfc-bars", role: "list", "data-testid": "gen-candidates" });
  const notes = h("div", { class: "tfc-note", "data-testid": "live-notes" });
  root.append(line, readout, bars, notes);

  const shown = (c) => (c === " " ? "␣" : c);             // 空格画成 ␣，看得见
  function draw(status = "") {
    sliders.forEach((s) => s());
    const toks = model.get("tokens"), steps = model.get("steps");
    const s = clamp(model.get("step"), 0, Math.max(steps.length - 1, 0));
    line.replaceChildren();
    model.get("prompt_tokens").forEach((c) => line.append(h("span", { class: "tfc-tok tfc-prompt", text: c })));
    toks.forEach((c, i) => {
      const b = h("button", { type: "button", class: "tfc-tok tfc-gen-tok" + (i === s ? " tfc-picked" : ""),
        "aria-pressed": String(i === s), "aria-label": `第 ${i + 1} 步写出的「${shown(c)}」`, text: shown(c) });
      b.addEventListener("click", () => { commit(model, { step: i }); draw(status); });
      line.append(b);
    });
    if (model.get("ended")) line.append(h("span", { class: "tfc-note", text: "（写出 ⏎：这段评论写完了）" }));
    bars.replaceChildren();
    if (!steps.length) { readout.textContent = "还没有写出字。"; notes.textContent = status; return; }
    const st = steps[s], t = model.get("temperature");
    const kept = t === 0 ? "贪心：只取打分最高的那一个" : `温度、top-k、top-p 之后留下 ${st.kept} 个候选`;
    readout.replaceChildren(`第 ${s + 1} 步写出「${shown(toks[s])}」：打分排第 ${st.rank + 1}；${kept}。`);
    const rows = st.top.map(([c, p], r) => [r, c, p]);
    if (st.rank >= rows.length) rows.push([st.rank, toks[s], st.drawn_p]);   // 抽中的字不在前 10：也画出来
    const top = Math.max(...rows.map((c) => c[2]), 1e-9);
    rows.forEach(([r, c, p]) => {
      const fill = h("div", { class: "tfc-bar-fill" });
      fill.style.width = `${(p / top) * 100}%`;
      bars.append(h("div", { class: "tfc-bar-row" + (r === st.rank ? " tfc-picked" : "") + (r < st.kept ? "" : " tfc-dropped"),
        role: "listitem" },
        h("span", { class: "tfc-bar-name", text: r >= 10 ? `第 ${r + 1}：${shown(c)}` : shown(c) }),
        h("div", { class: "tfc-bar-track" }, fill), h("span", { class: "tfc-bar-value", text: p.toFixed(3) })));
    });
    notes.textContent = [status, `柱长是温度 ${t === 0 ? 1 : t} 下的概率${ctrl && model.get("guidance") !== 1 ? "（引导之后）" : ""}；` +
      "灰色划线的候选被规则去掉了；□ 和控制 token 从不写出，不算候选。",
      ...(model.get("live_notes") || [])].filter(Boolean).join(" ");
  }

  let latest = 0, frame = null;
  function schedule() { if (frame === null) frame = requestAnimationFrame(recompute); }
  async function recompute() {
    frame = null;
    const text = input.value, mine = ++latest;
    const m = await courseModelShown(model, name, notes);
    if (!m || mine !== latest) return;                           // 读者又改了：只写最新的那一次
    const n = model.get("n_new"), SEP = 0;
    const prefix = [SEP, ...(ctrl ? [m.id(model.get("label") === 1 ? "<好评>" : "<差评>")] : [])];
    const limit = m.config.max_len - n - prefix.length;
    const chars = Array.from(text).slice(0, limit);
    const body = chars.length ? m.encode(chars.join("")) : [];
    const never = [m.unkId, m.id("<好评>"), m.id("<差评>")];
    const g = ctrl ? model.get("guidance") : 1, t = model.get("temperature");
    const neg = g === 1 ? null : [SEP, m.id(model.get("label") === 1 ? "<差评>" : "<好评>"), ...body];
    const steps = [];
    const out = m.generate([...prefix, ...body], n, {
      temperature: t, top_k: model.get("top_k") || null, top_p: model.get("top_p") < 1 ? model.get("top_p") : null,
      seed: model.get("seed"), suppress_ids: never, guidance_scale: g, negative_prompt_ids: neg,
      onStep(logits, next) {                               // 这一步的候选（与 generation_steps 相同的算法）
        const order = Array.from(logits.keys()).filter((i) => logits[i] > -Infinity)
          .sort((a, b) => logits[b] - logits[a] || a - b);
        const T = t > 0 ? t : 1, z = order.map((i) => Math.exp((logits[i] - logits[order[0]]) / T));
        const sum = z.reduce((a, b) => a + b, 0);
        const kept = t === 0 ? 1 : m.samplingRules(logits, { temperature: t, top_k: model.get("top_k") || null,
          top_p: model.get("top_p") < 1 ? model.get("top_p") : null }).ids.length;
        const rank = order.indexOf(next);
        steps.push({ top: order.slice(0, 10).map((i, r) => [m.itos[i], z[r] / sum]), kept, rank, drawn_p: z[rank] / sum });
        return next !== SEP;
      },
    }).slice(prefix.length + body.length);
    const shownPrompt = Array.from(m.decode(body));
    const masked = Array.from(m.maskOffensive(shownPrompt.join("") + m.decode(out))).slice(shownPrompt.length);
    const info = describeInput(text, limit, m.known, "□");
    commit(model, { prompt: text, prompt_tokens: shownPrompt, tokens: masked, steps,
      ended: out.length > 0 && out[out.length - 1] === SEP, step: Math.min(model.get("step"), Math.max(out.length - 1, 0)),
      live_notes: info.notes });
    draw(`${name} 在你的浏览器里写出了 ${out.length} 个 token。`);
  }
  input.addEventListener("input", schedule);
  draw();
}

export default { render };
