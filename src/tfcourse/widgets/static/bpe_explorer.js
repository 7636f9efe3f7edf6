// BPE 合并探索器（anywidget 前端）。每一步的切分由 Python 预先算好（只记录句子变化的那些步），这里只查表显示。

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-bpe" });
  el.append(root);
  root.append(h("div", { class: "tfc-title", text: "BPE 合并探索器：一次合并一对，看 token 怎样拼起来" }));
  const slider = rangeSlider(model, "step", "合并步数", 0, model.get("n_steps"), (v) => `${v} / ${model.get("n_steps")}`);
  root.append(slider.row);
  const prev = h("button", { type: "button", class: "tfc-bpe-jump", "data-testid": "bpe-prev", text: "◀ 上一次改变本句的合并" });
  const next = h("button", { type: "button", class: "tfc-bpe-jump", "data-testid": "bpe-next", text: "下一次改变本句的合并 ▶" });
  root.append(h("div", { class: "tfc-control" }, prev, next));
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite", "data-testid": "bpe-readout" });
  const box = h("div", { class: "tfc-bpe-tokens", "data-testid": "bpe-tokens" });
  root.append(readout, box);
  root.append(h("div", { class: "tfc-note", text: "⟨e5 a5⟩ 这样的十六进制是半个汉字的字节（UTF-8 里一个汉字占 3 个字节）；␣ 是空格。高亮的是刚刚这次合并生成的 token。" }));

  // 第 step 步之后的切分：最后一个 ≤ step 的变化点
  function changeIndex(step) {
    const cs = model.get("change_steps");
    let k = 0;
    while (k + 1 < cs.length && cs[k + 1] <= step) k++;
    return k;
  }
  prev.addEventListener("click", () => {
    const cs = model.get("change_steps"), st = model.get("step");
    const before = cs.filter((v) => v < st);
    commit(model, { step: before.length ? before[before.length - 1] : 0 });
  });
  next.addEventListener("click", () => {
    const cs = model.get("change_steps"), st = model.get("step");
    const after = cs.find((v) => v > st);
    commit(model, { step: after === undefined ? model.get("n_steps") : after });
  });

  function draw() {
    const n = model.get("n_steps");
    const st = clamp(model.get("step"), 0, n);
    slider.sync(st);
    const k = changeIndex(st);
    const ids = model.get("change_ids")[k];
    const labels = model.get("labels");
    const bytes0 = model.get("change_ids")[0].length;
    const newId = st > 0 ? 255 + st : -1;
    const changed = model.get("change_steps")[k] === st && st > 0;
    const m = st > 0 ? model.get("merges")[st - 1] : null;
    const parts = [];
    if (m) {
      parts.push(`第 ${st} 次合并：`, h("strong", { text: `「${m[0]}」+「${m[1]}」→「${m[2]}」` }),
        `（新 token 编号 ${newId}）`, changed ? "，本句里有这一对" : "，本句里没有这一对", h("br"));
    } else {
      parts.push("第 0 步：还没有合并，每个 token 是一个字节", h("br"));
    }
    parts.push("本句 token 数：", h("strong", { "data-testid": "bpe-count", text: String(ids.length) }),
      `（字节数 ${bytes0}，平均每个 token ${(bytes0 / ids.length).toFixed(2)} 字节）`);
    readout.replaceChildren(...parts);
    box.replaceChildren(...ids.map((id) => h("span", {
      class: id === newId ? "tfc-bpe-tok tfc-bpe-new" : "tfc-bpe-tok", title: `编号 ${id}`, text: labels[String(id)],
    })));
  }

  const schedule = batched(draw);
  const events = ["step", "n_steps", "merges", "change_steps", "change_ids", "labels"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
