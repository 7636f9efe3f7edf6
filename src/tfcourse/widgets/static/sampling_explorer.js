// 采样探索器（anywidget 前端）。每一步的候选、各温度下的概率、每种 温度 × top-k × top-p 组合留下几个候选，
// 都由 Python 预先算好；这里只查表、显示。

function render({ model, el }) {
  const root = h("div", { class: "tfc-widget tfc-sampling" });
  el.append(root);
  const g = model.get("generation");
  root.append(h("div", { class: "tfc-title", text: "一步一步看生成：温度、top-k、top-p 各留下哪些候选" }));
  const fmtT = (i) => model.get("temperatures")[i].toFixed(1);
  const fmtK = (j) => { const k = model.get("top_ks")[j]; return k === 0 ? "不用" : String(k); };
  const fmtP = (m) => { const p = model.get("top_ps")[m]; return p === 1 ? "不用" : p.toFixed(2); };
  const nSteps = () => model.get("drawn_rank").length;
  const stepS = rangeSlider(model, "step", "第几步", 0, nSteps() - 1, (s) => `${s + 1} / ${nSteps()}`);
  const tS = rangeSlider(model, "t_index", "温度 temperature", 0, model.get("temperatures").length - 1, fmtT);
  const kS = rangeSlider(model, "k_index", "top-k", 0, model.get("top_ks").length - 1, fmtK);
  const pS = rangeSlider(model, "p_index", "top-p", 0, model.get("top_ps").length - 1, fmtP);
  root.append(stepS.row, tS.row, kS.row, pS.row);
  const gk = g.top_k ? `top-k = ${g.top_k}` : "不用 top-k";
  const gp = g.top_p < 1 ? `top-p = ${g.top_p}` : "不用 top-p";
  root.append(h("div", { class: "tfc-note", text: `这段话是模型用 温度 ${g.temperature}、${gk}、${gp}、种子 ${g.seed} 生成的；橙框是这一步实际抽中的字。拖动温度、top-k、top-p，看同一步换一种规则会留下哪些候选。` }));
  const prefix = h("div", { class: "tfc-prefix", "data-testid": "prefix" });
  const readout = h("div", { class: "tfc-readout", "aria-live": "polite" });
  const bars = h("div", { class: "tfc-cands" });
  root.append(prefix, readout, bars);
  root.append(h("div", { class: "tfc-note", text: "柱长：该温度下的概率（全词表 softmax）；蓝色 = 两条规则都用之后还留着，灰色划线 = 被去掉；括号里是留下的候选重新归一化后的概率（真正抽样用的）。只列打分最高的 30 个。" }));

  function draw() {
    const n = nSteps();
    const s = clamp(model.get("step"), 0, n - 1);
    const i = clamp(model.get("t_index"), 0, model.get("temperatures").length - 1);
    const j = clamp(model.get("k_index"), 0, model.get("top_ks").length - 1);
    const m = clamp(model.get("p_index"), 0, model.get("top_ps").length - 1);
    stepS.sync(s); tS.sync(i); kS.sync(j); pS.sync(m);
    const toks = model.get("tokens"), n0 = model.get("n_prompt");
    prefix.replaceChildren();
    toks.slice(0, n0).forEach((c) => prefix.append(h("span", { class: "tfc-tok tfc-prompt", text: c })));
    toks.slice(n0, n0 + s).forEach((c) => prefix.append(h("span", { class: "tfc-tok", text: c })));
    prefix.append(h("span", { class: "tfc-tok tfc-drawn", "data-testid": "drawn", text: toks[n0 + s] }));
    const kept = model.get("kept"), mass = model.get("kept_mass");
    const nBoth = kept[i][j][m][s], nK = kept[i][j][0][s], nP = kept[i][0][m][s];
    const massBoth = mass[i][j][m][s];
    const rank = model.get("drawn_rank")[s];
    const probs = model.get("probs")[i][s];
    const cands = model.get("cand_tokens")[s];
    const kStr = model.get("top_ks")[j] === 0 ? "不用 top-k：全部留下" : `top-k 留下 ${nK} 个`;
    const pStr = model.get("top_ps")[m] === 1 ? "不用 top-p" : `top-p 单独用留下 ${nP} 个`;
    readout.replaceChildren(
      `温度 ${fmtT(i)}：${kStr}；${pStr}；两条都用（先 top-k 再 top-p）留下 `,
      h("strong", { "data-testid": "n-kept", text: String(nBoth) }),
      ` 个候选，它们的总概率 `, h("strong", { "data-testid": "kept-mass", text: massBoth.toFixed(3) }), "。",
      h("br"),
      `这一步实际抽中「${toks[n0 + s]}」：`,
      rank >= cands.length ? `打分排第 ${rank + 1}，不在下面列出的前 ${cands.length} 个里；` :
        `打分排第 ${rank + 1}，这个温度下概率 ${probs[rank].toFixed(3)}；`,
      rank < nBoth ? "当前规则下它还留着。" : "当前规则下它会被去掉。"
    );
    bars.replaceChildren();
    const top = Math.max(...probs, 1e-9);
    cands.forEach((c, r) => {
      const keep = r < nBoth;
      const row = h("div", { class: `tfc-cand${keep ? "" : " tfc-off"}${r === rank ? " tfc-picked" : ""}`, "data-testid": `cand-${r}` });
      const fill = h("div", { class: "tfc-cand-fill" });
      fill.style.width = `${(100 * probs[r]) / top}%`;
      const val = keep ? `${probs[r].toFixed(3)}（${(probs[r] / massBoth).toFixed(3)}）` : probs[r].toFixed(3);
      row.append(h("span", { class: "tfc-cand-name", text: `${r + 1}. ${c}` }), h("div", { class: "tfc-cand-track" }, fill), h("span", { class: "tfc-cand-value", text: val }));
      bars.append(row);
    });
  }

  const schedule = batched(draw);
  const events = ["step", "t_index", "k_index", "p_index", "tokens", "probs", "kept", "kept_mass", "cand_tokens", "drawn_rank"];
  for (const name of events) model.on(`change:${name}`, schedule);
  draw();
  return () => { for (const name of events) model.off(`change:${name}`, schedule); };
}

export default { render };
