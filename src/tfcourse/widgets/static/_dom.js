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
