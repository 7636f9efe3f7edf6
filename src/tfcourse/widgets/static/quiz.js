// 章末自测（anywidget 前端）：题目与判分规则由 Python 给出（widgets/quiz.py），这里显示、判分、存作答。
// 判分与 Quiz.grade 相同：单选、多选要选中的集合等于正确的集合；填数题 |作答 − 答案| ≤ 容差。
// 作答存在浏览器的 localStorage（键 tfcourse-quiz:第几章:题号），刷新后还在；存不了（隐私模式）时只在本页有效。
// 选择题的作答按选项的 key 存（key 由选项文字算出），不按位置：选项换了顺序，作答仍指向原来的选项。

const QUIZ_KEY = (chapter, id) => `tfcourse-quiz:${chapter}:${id}`;

function loadAnswer(chapter, id) {
  try { const v = window.localStorage.getItem(QUIZ_KEY(chapter, id)); return v === null ? null : JSON.parse(v); }
  catch (e) { return null; }
}
function storeAnswer(chapter, id, value) {
  try {
    if (value === null) window.localStorage.removeItem(QUIZ_KEY(chapter, id));
    else window.localStorage.setItem(QUIZ_KEY(chapter, id), JSON.stringify(value));
  } catch (e) { /* 浏览器不让存：只在本页有效 */ }
}

// 与 Quiz.grade 一样：null = 没答
function gradeOne(q, a) {
  if (a === null || a === undefined || (Array.isArray(a) && a.length === 0)) return null;
  if (q.kind === "number") return typeof a === "number" && Number.isFinite(a) && Math.abs(a - q.answer) <= q.tolerance + 1e-12;
  const want = new Set(q.options.filter((o) => o.correct).map((o) => o.key));
  const got = new Set(a);
  return got.size === want.size && [...got].every((k) => want.has(k));
}

// 读者输入的数：允许全角数字、千分位逗号、百分号（"85.3%" 按 85.3 算，题干会写明单位）
function parseNumber(text) {
  const t = String(text).trim()
    .replace(/[０-９]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0xfee0))
    .replace(/[，,](?=\d{3}\b)/g, "").replace(/[．。]/g, ".").replace(/[−–—]/g, "-").replace(/[%％]$/, "");
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return null;
  return Number(t);
}

function render({ model, el }) {
  const chapter = model.get("chapter");
  const uid = Math.random().toString(36).slice(2, 8);
  const root = h("section", { class: "tfc-widget tfc-quiz", "aria-label": `第 ${chapter} 章自测` });
  el.append(root);
  const score = h("p", { class: "tfc-quiz-score", "data-testid": "score", "aria-live": "polite" });
  root.append(score);
  const answers = {};
  const cards = [];

  function refreshScore() {
    const qs = model.get("questions");
    const graded = qs.map((q) => gradeOne(q, answers[q.id] ?? null));
    const right = graded.filter((g) => g === true).length, done = graded.filter((g) => g !== null).length;
    score.textContent = `共 ${qs.length} 题，已答 ${done} 题，答对 ${right} 题。`;
    commit(model, { answers: { ...answers } });
  }

  model.get("questions").forEach((q, qi) => {
    const name = `tfc-quiz-${uid}-${qi}`;
    const card = h("fieldset", { class: "tfc-quiz-q", "data-testid": `q-${q.id}`, "data-kind": q.kind });
    const legend = h("legend", {}, h("span", { class: "tfc-quiz-no", text: `${qi + 1}. ` }), q.prompt);
    card.append(legend);
    if (q.code) card.append(h("pre", { class: "tfc-quiz-code" }, h("code", { text: q.code })));
    const inputs = [];
    if (q.kind === "number") {
      const id = `${name}-n`;
      const input = h("input", { type: "text", inputmode: "decimal", id, autocomplete: "off", "data-testid": "number" });
      card.append(h("div", { class: "tfc-quiz-num" }, h("label", { for: id, text: "你的答案" }), input,
        h("span", { text: q.unit || "" })));
      inputs.push(input);
    } else {
      const list = h("div", { class: "tfc-quiz-options", role: q.kind === "single" ? "radiogroup" : "group" });
      q.options.forEach((opt, j) => {
        const id = `${name}-${j}`;
        const input = h("input", { type: q.kind === "single" ? "radio" : "checkbox", name, id, value: opt.key,
          "data-testid": `opt-${j}`, "data-key": opt.key });
        list.append(h("div", { class: "tfc-quiz-opt" }, input, h("label", { for: id, text: opt.text })));
        inputs.push(input);
      });
      card.append(list);
      if (q.kind === "multi") card.append(h("p", { class: "tfc-note", text: "可多选：选中的要恰好是全部正确的选项。" }));
    }
    const check = h("button", { type: "button", class: "tfc-quiz-check", "data-testid": "check", text: "核对" });
    const reset = h("button", { type: "button", class: "tfc-quiz-reset", "data-testid": "reset", text: "重做" });
    const verdict = h("div", { class: "tfc-quiz-verdict", "data-testid": "verdict", "aria-live": "polite" });
    card.append(h("div", { class: "tfc-quiz-actions" }, check, reset), verdict);
    root.append(card);

    function current() {
      if (q.kind === "number") return parseNumber(inputs[0].value);
      return inputs.filter((i) => i.checked).map((i) => i.value);
    }
    function show(a) {
      verdict.replaceChildren();
      card.classList.remove("tfc-right", "tfc-wrong");
      const g = gradeOne(q, a);
      if (g === null) {
        if (q.kind === "number" && inputs[0].value.trim()) {
          verdict.append(h("p", { class: "tfc-quiz-bad", text: `读不出"${inputs[0].value.trim()}"是一个数：请只填数字（可带小数点和负号）。` }));
        }
        return;
      }
      card.classList.add(g ? "tfc-right" : "tfc-wrong");
      verdict.append(h("p", { class: "tfc-quiz-mark", text: g ? "✓ 答对了。" : "✗ 还不对。" }));
      if (q.kind === "number") {
        verdict.append(h("p", { text: g ? q.why : `提示：${q.hint}` }));
        if (!g) verdict.append(h("p", { class: "tfc-note", text: `（允许的误差：±${q.tolerance}${q.unit || ""}）` }));
      } else {
        const picked = new Set(a);
        const notes = h("ul", { class: "tfc-quiz-why" });
        q.options.forEach((o) => {
          if (picked.has(o.key) && !o.correct) notes.append(h("li", { class: "tfc-quiz-wrongpick", text: `「${o.text}」：${o.why}` }));
          if (g && o.correct) notes.append(h("li", { class: "tfc-quiz-rightpick", text: `「${o.text}」：${o.why}` }));
        });
        if (!g && q.kind === "multi" && q.options.every((o) => o.correct || !picked.has(o.key))) {
          notes.append(h("li", { text: "选中的都对，但还漏了正确的选项。" }));
        }
        verdict.append(notes);
      }
    }
    function restore(a) {
      if (a === null) return;
      if (q.kind === "number") {
        if (typeof a !== "number") return;
        inputs[0].value = String(a);
      } else {
        // 只认这道题现在的选项（旧版按位置存的作答、已经改掉的选项都丢掉）
        if (!Array.isArray(a)) return;
        a = a.filter((k) => q.options.some((o) => o.key === k));
        if (!a.length) return;
        inputs.forEach((i) => { i.checked = a.includes(i.value); });
      }
      answers[q.id] = a;
      show(a);
    }
    check.addEventListener("click", () => {
      const a = current();
      if (a === null || (Array.isArray(a) && !a.length)) {
        show(null);
        if (!(q.kind === "number" && inputs[0].value.trim())) {
          verdict.replaceChildren(h("p", { class: "tfc-quiz-bad", text: q.kind === "number" ? "先填一个数，再核对。" : "先选一个选项，再核对。" }));
        }
        delete answers[q.id];
        storeAnswer(chapter, q.id, null);
      } else {
        answers[q.id] = a;
        storeAnswer(chapter, q.id, a);
        show(a);
      }
      refreshScore();
    });
    if (q.kind === "number") inputs[0].addEventListener("keydown", (e) => { if (e.key === "Enter") check.click(); });
    reset.addEventListener("click", () => {
      if (q.kind === "number") inputs[0].value = "";
      else inputs.forEach((i) => { i.checked = false; });
      delete answers[q.id];
      storeAnswer(chapter, q.id, null);
      show(null);
      verdict.replaceChildren();
      refreshScore();
    });
    cards.push({ q, restore });
  });

  for (const { q, restore } of cards) restore(loadAnswer(chapter, q.id));
  refreshScore();
}

export default { render };
