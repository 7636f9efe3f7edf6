// 遮一个字，看 bert-zh 猜什么（第 12 章，anywidget 前端）。读者写一句话、点一个字把它遮住，
// 课程的 bert-zh 在浏览器里读 [CLS] + 句子 + [SEP]（被点的字换成 [MASK]），列出它在那个位置最可能的字
// （与第 12 章的 fill 相同）。打开时的候选由 Python 算好；读者改了句子或点了别的字，才取权重重算。

function render({ model, el }) {
  const name = model.get("live_model");
  const root = h("div", { class: "tfc-widget tfc-live tfc-fill" });
  el.append(root);
  if (model.get("title")) root.append(h("div", { class: "tfc-title", text: model.get("title") }));
  const input = h("textarea", { class: "tfc-live-input", rows: "2", "aria-label": "你的句子（改动后重新猜）",
    placeholder: "写一句话，再点其中一个字把它遮住" });
  input.value = model.get("text");
  const chars = h("div", { class: "tfc-fill-chars", role: "group", "aria-label": "点一个字把它遮住" });
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite", "data-testid": "fill-readout" });
  const bars = h("div", { class: "tfc-bars", role: "list", "data-testid": "fill-candidates" });
  const notes = h("div", { class: "tfc-note", "data-testid": "live-notes" });
  root.append(h("label", { class: "tfc-live-label", text: "你的句子：" }), input,
    h("div", { class: "tfc-note", text: "点下面任一个字，把它换成 [MASK]：" }), chars, readout, bars, notes);

  function draw(status = "") {
    const text = model.get("text"), limit = model.get("live_limit");
    const visible = Array.from(text).slice(0, limit);
    const pos = model.get("position");
    chars.replaceChildren();
    visible.forEach((c, i) => {
      const b = h("button", { type: "button", class: "tfc-fill-char" + (i === pos ? " tfc-picked" : ""),
        "aria-pressed": String(i === pos), "aria-label": `遮住第 ${i + 1} 个字「${c}」`, text: i === pos ? "＿" : c });
      b.addEventListener("click", () => { if (i !== pos) { commit(model, { position: i }); recompute(); } });
      chars.append(b);
    });
    const cands = model.get("candidates");
    bars.replaceChildren();
    if (!visible.length || pos < 0) {
      readout.textContent = "先写一句话：至少一个字。";
    } else {
      const orig = visible[pos] === " " ? "␣" : visible[pos], rank = model.get("original_rank");
      readout.replaceChildren(`bert-zh 猜「＿」处（原字「${orig}」）最可能是：`);
      const top = Math.max(...cands.map((c) => c[1]), 1e-9);
      cands.forEach(([c, p]) => {
        const fill = h("div", { class: "tfc-bar-fill" });
        fill.style.width = `${(p / top) * 100}%`;
        bars.append(h("div", { class: "tfc-bar-row" + (c === visible[pos] ? " tfc-picked" : ""), role: "listitem" },
          h("span", { class: "tfc-bar-name", text: c === " " ? "␣" : c }),
          h("div", { class: "tfc-bar-track" }, fill),
          h("span", { class: "tfc-bar-value", text: p.toFixed(3) })));
      });
      const said = rank < 0 ? `原字「${orig}」不在字表里，模型猜不出它。`
        : `原字「${orig}」的概率 ${model.get("original_prob").toFixed(3)}，排第 ${rank + 1}。`;
      readout.append(h("br"), h("span", { "data-testid": "fill-original", text: said }));
    }
    notes.textContent = [status, ...(model.get("live_notes") || [])].filter(Boolean).join(" ");
  }

  let latest = 0, frame = null;
  async function recompute() {
    frame = null;
    const text = input.value, mine = ++latest, limit = model.get("live_limit");
    const visible = Array.from(text).slice(0, limit);
    const moved = follow(Array.from(model.get("text")), Array.from(text), model.get("position"));
    const pos = visible.length ? clamp(moved, 0, visible.length - 1) : -1;
    if (!visible.length) { commit(model, { text, position: -1, candidates: [], live_notes: [] }); draw(); return; }
    const m = await courseModelShown(model, name, notes);
    if (!m || mine !== latest) return;                          // 读者又改了：只算最新的那一次
    const { "[CLS]": cls, "[SEP]": sep, "[MASK]": mask } = m.specials;
    const ids = [cls, ...m.encode(visible.join("")), sep];
    const original = ids[1 + pos];
    ids[1 + pos] = mask;
    const V = m.config.vocab_size, logits = m.logitsAt(ids, 1 + pos);     // 被遮住那个位置的 (V,)
    let max = -Infinity, sum = 0;
    for (const v of logits) max = Math.max(max, v);
    const p = Array.from(logits, (v) => Math.exp(v - max));
    for (const v of p) sum += v;
    for (let i = 0; i < V; i++) p[i] /= sum;                 // softmax（与 fill 的 .softmax(-1) 相同）
    const order = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b);
    const known = m.known(visible[pos]);
    commit(model, {
      text, position: pos,
      candidates: order.slice(0, model.get("k")).map((i) => [m.itos[i], p[i]]),
      original_prob: known ? p[original] : 0, original_rank: known ? order.indexOf(original) : -1,
      live_notes: describeInput(text, limit, m.known).notes,
    });
    draw(`${name} 在你的浏览器里读了这 ${visible.length} 个字。`);
  }
  input.addEventListener("input", () => { if (frame === null) frame = requestAnimationFrame(recompute); });
  draw();
}

// 遮住的字跟着它走：比较改动前后相同的开头与结尾，改动在它前面时位置随之移动，它自己被改掉时留在改动开始处
function follow(before, after, pos) {
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  if (pos < head) return pos;
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head &&
         before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  return pos >= before.length - tail ? pos + after.length - before.length : head;
}

export default { render };
