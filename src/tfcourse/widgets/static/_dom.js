// 全书小部件前端共用的小工具（Python 端把这个文件拼在每个小部件模块的前面，见 widgets/_base.py）。
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// 把读者的操作写回模型。活内核里 save_changes 把它同步回 Python；
// 静态网页上没有内核，save_changes 无处可发：吞掉这个错误，本地状态照常更新。
function commit(model, changes) {
  for (const [k, v] of Object.entries(changes)) model.set(k, v);
  try { model.save_changes(); } catch (e) { /* 静态页面：没有内核可同步 */ }
}

// 一次操作常常同时改好几个属性：合并成一次重绘。
function batched(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => { pending = false; fn(); });
  };
}

const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));

// SVG 元素（曲线图、柱状图用）
const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// 整数滑块（一行：标签、滑块、读数）。拖动时把夹回范围的值写回模型；sync(v) 在重绘时更新滑块与读数。
function rangeSlider(model, key, label, min, max, show) {
  const id = `tfc-${key}-${Math.random().toString(36).slice(2, 8)}`;
  const input = h("input", { type: "range", id, min: String(min), max: String(max), step: "1", "data-testid": key });
  const out = h("output", { for: id });
  input.addEventListener("input", () => commit(model, { [key]: clamp(Number(input.value), min, max) }));
  const row = h("div", { class: "tfc-control" }, h("label", { for: id, text: label }), input, out);
  function sync(v) {
    input.value = String(v);
    out.textContent = show(v);
    input.setAttribute("aria-valuetext", show(v));
  }
  return { row, input, out, sync, key };
}

// 当前是否暗色主题：网站（pydata 主题）看 html[data-theme]；JupyterLab 看 body[data-jp-theme-light]；
// VS Code 看 body.vscode-dark；都没有时看系统设置 prefers-color-scheme。
function isDark() {
  const theme = document.documentElement.getAttribute("data-theme");
  if (theme === "dark" || theme === "light") return theme === "dark";
  const body = document.body;
  const jp = body ? body.getAttribute("data-jp-theme-light") : null;
  if (jp === "true" || jp === "false") return jp === "false";
  if (body && body.classList.contains("vscode-dark")) return true;
  return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
}

// 主题切换时调用 fn（用 JavaScript 上色的部分——热力图格子、画布——要重画）。返回取消监听的函数。
function onThemeChange(fn) {
  let last = isDark();
  const check = () => { const now = isDark(); if (now !== last) { last = now; fn(now); } };
  const obs = new MutationObserver(check);
  obs.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme", "class"] });
  if (document.body) obs.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "class"] });
  const mq = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  if (mq && mq.addEventListener) mq.addEventListener("change", check);
  return () => { obs.disconnect(); if (mq && mq.removeEventListener) mq.removeEventListener("change", check); };
}

// 让 target 在可横向滚动的盒子 scroller 里露出来（只滚这个盒子，不滚整页）。leftInset：左边固定不动的
// 那一列（例如粘在左边的行首）的宽度。还没排版时（宽度为 0）返回 false。
function revealInScroller(scroller, target, leftInset = 0, margin = 8) {
  if (!scroller || !target || !scroller.clientWidth) return false;
  const box = scroller.getBoundingClientRect(), r = target.getBoundingClientRect();
  const left = box.left + leftInset + margin;
  if (r.left < left) scroller.scrollLeft -= left - r.left;
  else if (r.right > box.right - margin) scroller.scrollLeft += r.right - (box.right - margin);
  return true;
}
