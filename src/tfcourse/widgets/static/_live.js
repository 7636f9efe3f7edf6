// 读者自己的文字交给课程的模型（拼在用得到它的小部件模块前面，见 widgets/_base.py 的 esm(..., live=True)）。
// - 本书网站上：每一页都加载了 runtime.js，window.tfcourse.models.load(name) 从网站自己的文件取权重；
// - Jupyter / Colab / Binder 里：没有网站。向 Python 发一条小部件消息，Python 回运行时的源码和 float16 权重
//   （widgets._base.LiveModels），在这里建模型。两边跑的是同一份 runtime.js。
// 第一次用到时才取：页面打开时不下载任何权重。
const _liveModels = new Map();
function courseModel(model, name) {
  if (model.tfcourseStatic) {                           // 静态网页的渲染器（widgets-static.js）给的小 model
    const models = window.tfcourse && window.tfcourse.models;
    return models ? models.load(name) : Promise.reject(new Error("这一页没有加载模型运行时（runtime.js）。"));
  }
  if (!_liveModels.has(name)) {
    _liveModels.set(name, new Promise((resolve, reject) => {
      const onMessage = async (msg, buffers) => {
        if (!msg || msg.tfcourse_model !== name) return;
        model.off("msg:custom", onMessage);
        if (msg.error) { reject(new Error(msg.error)); return; }
        try {
          const url = URL.createObjectURL(new Blob([msg.runtime], { type: "text/javascript" }));
          const runtime = await import(url);
          URL.revokeObjectURL(url);
          const b = buffers[0];
          const bytes = b instanceof ArrayBuffer ? b : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
          resolve(runtime.fromSafetensors(name, bytes));
        } catch (e) { reject(e); }
      };
      model.on("msg:custom", onMessage);
      model.send({ tfcourse_request: "model", name });
    }));
    _liveModels.get(name).catch(() => _liveModels.delete(name));   // 失败的下次重试
  }
  return _liveModels.get(name);
}

// 同上，并在 notes 里说出正在做什么：第一次取权重时"正在取……"，取不到时说为什么（返回 null）
async function courseModelShown(model, name, notes) {
  try {
    const pending = courseModel(model, name);
    notes.textContent = `正在取 ${name} 的权重（只在第一次）……`;
    return await pending;
  } catch (e) {
    notes.textContent = `没能载入模型 ${name}：${e.message}`;
    return null;
  }
}

// 读者输入的文字在模型眼里是什么样：截断到 limit 个字（按码位数，与 Python 的切片相同）、字表外的字
function describeInput(text, limit, known, unk = "[UNK]") {
  const chars = Array.from(text);
  const kept = chars.slice(0, limit);
  const unknown = [...new Set(kept.filter((c) => !known(c)))];
  const notes = [];
  if (chars.length > limit) notes.push(`模型只读前 ${limit} 个字：从第 ${limit + 1} 个字「${chars[limit]}」起没有读。`);
  if (unknown.length) notes.push(`${unknown.slice(0, 6).map((c) => `「${c}」`).join("")}${unknown.length > 6 ? ` 等 ${unknown.length} 个字` : ""}不在字表里，模型看到的是 ${unk}。`);
  return { chars: kept, truncated: chars.length > limit, unknown, notes };
}
