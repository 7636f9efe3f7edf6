// 样本看板（anywidget 前端）：模型 × 控制 token 的一格格样本，每格下面是每位评委的判决。
// 文本、概率、判决、成功率都由 Python 算好；这里只按"第几条"查表显示。

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-board" });
  el.append(root);
  root.append(h("div", { class: "tfc-title", text: "生成的评论：按控制 token 与微调方式并排看，每位评委各判一次" }));
  const n = () => model.get("texts")[0][0].length;
  const slider = rangeSlider(model, "index", "第几条样本", 0, n() - 1, (i) => `${i + 1} / ${n()}`);
  root.append(slider.row);
  const grid = h("div", { class: "tfc-board-grid", "data-testid": "board" });
  root.append(grid);
  root.append(h("div", { class: "tfc-note", text: "每格：这一行的模型在这一列的控制 token 下写的第 i 条（同一种子）。评委给出 P(好评)，≥ 0.5 判为好评；✓ = 判成了所要求的情感，✗ = 没有。每格底部的百分比是这一格全部样本里每位评委判成所要求情感的比例（控制成功率）。□ 是字表之外的字；＊ 遮住的是侮辱性的词（评论语料里有，模型也学会了写）。" }));

  function draw() {
    const i = clamp(model.get("index"), 0, n() - 1);
    slider.sync(i);
    const models = model.get("models"), controls = model.get("controls"), judges = model.get("judges");
    const wanted = model.get("wanted"), texts = model.get("texts"), probs = model.get("probs");
    const verdicts = model.get("verdicts"), success = model.get("success");
    grid.replaceChildren();
    grid.append(h("div", { class: "tfc-board-head" }, h("span", { text: "" }),
      ...controls.map((c) => h("span", { class: "tfc-board-col", text: `要求：${c}` }))));
    models.forEach((name, m) => {
      const row = h("div", { class: "tfc-board-row", "data-testid": `row-${m}` });
      row.append(h("div", { class: "tfc-board-model", text: name }));
      controls.forEach((ctrl, c) => {
        const cell = h("div", { class: "tfc-board-cell", "data-testid": `cell-${m}-${c}` });
        cell.append(h("div", { class: "tfc-board-ctrl", text: `<${ctrl}>` }));
        const text = texts[m][c][i];
        cell.append(h("div", { class: "tfc-board-text", "data-testid": "text", text: text.length ? text : "（空：第一个字就是 ⏎）" }));
        const marks = h("div", { class: "tfc-board-verdicts" });
        judges.forEach((judge, j) => {
          const v = verdicts[m][c][i][j], hit = v === wanted[c];
          marks.append(h("span", { class: `tfc-board-verdict ${hit ? "tfc-hit" : "tfc-miss"}`, "data-testid": `verdict-${j}`,
            text: `${hit ? "✓" : "✗"} ${judge}：${v === 1 ? "好评" : "差评"}（${probs[m][c][i][j].toFixed(2)}）` }));
        });
        cell.append(marks);
        cell.append(h("div", { class: "tfc-board-rate", "data-testid": "rate",
          text: "成功率 " + judges.map((judge, j) => `${judge} ${(100 * success[m][c][j]).toFixed(0)}%`).join(" · ") }));
        row.append(cell);
      });
      grid.append(row);
    });
  }

  const schedule = batched(draw);
  const events = ["index", "texts", "probs", "verdicts", "success", "models", "controls", "judges"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
