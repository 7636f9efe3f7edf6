// 静态网页上的小部件渲染器：不要 Python 内核，也不要 @jupyter-widgets/html-manager（4 MB，gzip 后约 0.9 MB）。
//
// 本书网页上只有两类小部件：
// - 课程自己的 anywidget 小部件（AnyModel）：前端是一个 ES 模块，存在小部件状态的 _esm 里，
//   只用到 model.get / set / on / off / save_changes。这里给每个小部件造一个同样接口的小 model，
//   把模块交给它的 render({ model, el })——和 Jupyter 里运行的是同一份前端代码。
// - tqdm 的进度条：HBox(HTML, FloatProgress, HTML)，画出它停下时的样子。
// 页面里嵌着 myst-nb 保存的小部件状态（application/vnd.jupyter.widget-state+json），
// 每个输出位置有一个 application/vnd.jupyter.widget-view+json 脚本指向某个模型。
(function () {
  "use strict";
  const STATE = 'script[type="application/vnd.jupyter.widget-state+json"]';
  const VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';

  class Model {
    constructor(state) {
      this._state = Object.assign({}, state);
      this._handlers = new Map();
    }
    get(name) { return this._state[name]; }
    set(name, value) {
      const old = this._state[name];
      this._state[name] = value;
      if (old !== value) {
        this._emit("change:" + name, value);
        this._emit("change", value);
      }
    }
    on(events, callback) {
      for (const e of String(events).split(/\s+/)) {
        if (!this._handlers.has(e)) this._handlers.set(e, new Set());
        this._handlers.get(e).add(callback);
      }
    }
    off(events, callback) {
      const names = events ? String(events).split(/\s+/) : [...this._handlers.keys()];
      for (const e of names) {
        if (!this._handlers.has(e)) continue;
        if (callback) this._handlers.get(e).delete(callback);
        else this._handlers.delete(e);
      }
    }
    _emit(event, value) {
      for (const cb of this._handlers.get(event) || []) cb(this, value);
    }
    save_changes() {}            // 没有内核：改动只留在页面里
    send() {}
    get tfcourseStatic() { return true; }   // 小部件据此向网站的 runtime.js 要课程的模型（_live.js）
  }

  const styled = new Set();
  function addCss(css) {
    if (!css || styled.has(css)) return;
    styled.add(css);
    const style = document.createElement("style");
    style.textContent = css;
    document.head.appendChild(style);
  }

  const modules = new Map();     // ESM 源码 → 模块（同一种小部件只加载一次）
  function loadModule(source) {
    if (!modules.has(source)) {
      const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
      modules.set(source, import(url));
    }
    return modules.get(source);
  }

  function ref(value) {
    return typeof value === "string" && value.startsWith("IPY_MODEL_") ? value.slice(10) : null;
  }

  async function renderAny(entry, model, el) {
    const s = entry.state;
    addCss(s._css);
    const mod = await loadModule(s._esm);
    let widget = mod.default !== undefined ? mod.default : mod;
    if (typeof widget === "function") widget = await widget();
    if (widget.initialize) await widget.initialize({ model });
    await widget.render({ model, el });
  }

  function renderControl(states, id, el) {
    const entry = states[id];
    if (!entry) return;
    const s = entry.state;
    const name = entry.model_name;
    if (name === "HBoxModel" || name === "VBoxModel") {
      const box = document.createElement("div");
      box.className = "tfc-static-box";
      box.style.display = "flex";
      box.style.flexDirection = name === "HBoxModel" ? "row" : "column";
      box.style.alignItems = "center";
      box.style.flexWrap = "wrap";          // 手机上进度条的文字换到下一行，页面不横向滚动
      box.style.gap = "0.25em 0.5em";
      box.style.maxWidth = "100%";
      for (const child of s.children || []) renderControl(states, ref(child), box);
      el.appendChild(box);
    } else if (name === "HTMLModel" || name === "LabelModel") {
      const span = document.createElement("span");
      span.className = "tfc-static-html";
      span.style.overflowWrap = "anywhere";
      span.style.minWidth = "0";
      if (name === "HTMLModel") span.innerHTML = s.value || "";
      else span.textContent = s.value || "";
      el.appendChild(span);
    } else if (name === "FloatProgressModel" || name === "IntProgressModel") {
      const bar = document.createElement("progress");
      bar.className = "tfc-static-progress";
      bar.value = s.value - s.min;
      bar.max = s.max - s.min;
      bar.setAttribute("aria-label", "进度");
      bar.style.flex = "1 1 8em";
      bar.style.maxWidth = "24em";
      el.appendChild(bar);
    }
  }

  async function main() {
    const tag = document.querySelector(STATE);
    if (!tag) return;
    const states = JSON.parse(tag.textContent).state || {};
    const models = new Map();
    const jobs = [];
    for (const view of document.querySelectorAll(VIEW)) {
      let id;
      try { id = JSON.parse(view.textContent).model_id; } catch (e) { continue; }
      const entry = states[id];
      if (!entry) continue;
      const el = document.createElement("div");
      el.className = "tfc-static-widget";
      view.parentNode.insertBefore(el, view);
      if (entry.model_module === "anywidget") {
        if (!models.has(id)) models.set(id, new Model(entry.state));
        jobs.push(renderAny(entry, models.get(id), el).catch((err) => {
          el.textContent = "小部件加载失败：" + err;
          console.error(err);
        }));
      } else {
        renderControl(states, id, el);
      }
    }
    await Promise.all(jobs);
    document.documentElement.dataset.tfcWidgets = "ready";   // 浏览器测试等这个标记
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
