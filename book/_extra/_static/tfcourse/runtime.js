// 课程模型的浏览器运行时：在读者的浏览器里、不要 Python，用课程自己训练的权重算 logits、接着写。
// ES 模块，没有第三方代码。权重是网站自己的文件（_static/tfcourse/models/NAME.safetensors，make book 时由
// tfcourse.webmodels 从检查点导出），第一次 load 时才下载。
//
// 每个函数按它对照的 Python 命名，形状写在注释里（T 个位置、C = d_model、H 个头、D = C / H、V 个 token），
// 读者可以把两边并排看：
//   embed            ↔ gpt.GPT.forward 的 tok_emb(ids) + pos_emb.weight[P:P+T]
//   layerNorm        ↔ torch.nn.LayerNorm
//   linear           ↔ torch.nn.Linear
//   multiHeadAttention ↔ attention.MultiHeadAttention（带 KV 缓存，因果掩码）
//   feedForward      ↔ layers.FeedForward（GELU）
//   encoderLayer     ↔ layers.EncoderLayer(norm_first=True)
//   gptForward       ↔ gpt.GPT.forward(ids, cache, last_only=True)
//   generate         ↔ gpt.generate（temperature = 0 是贪心；温度、top-k、top-p、suppress_ids、无分类器引导）
// 契约：window.tfcourse.models.load("gpt-zh" 或 "gpt-zh-ctrl") → { encode(text), logits(ids), generate(ids, n, options) }。

const MODELS_URL = new URL("./models/", import.meta.url);

// ---------------------------------------------------------------- 读 safetensors（float16 → float32）
function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;                  // 次正规数
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

export function parseSafetensors(buffer) {
  const view = new DataView(buffer);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, n)));
  const tensors = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    if (info.dtype !== "F16") throw new Error(`${name} 的数据类型是 ${info.dtype}，运行时只读 F16。`);
    const [start, end] = info.data_offsets;
    const halves = new Uint16Array(buffer.slice(8 + n + start, 8 + n + end));
    const data = new Float32Array(halves.length);
    for (let i = 0; i < halves.length; i++) data[i] = halfToFloat(halves[i]);
    tensors[name] = { shape: info.shape, data };
  }
  return { tensors, metadata: header.__metadata__ || {} };
}

// ---------------------------------------------------------------- 基本运算（x 是按行存的 (T, C) 矩阵）
export function linear(x, T, weight, bias) {             // (T, in) · Wᵀ + b → (T, out)；W 的形状 (out, in)
  const [out, inF] = weight.shape, W = weight.data, b = bias ? bias.data : null;
  const y = new Float32Array(T * out);
  for (let t = 0; t < T; t++) {
    const xo = t * inF;
    for (let o = 0; o < out; o++) {
      let s = b ? b[o] : 0;
      const wo = o * inF;
      for (let i = 0; i < inF; i++) s += x[xo + i] * W[wo + i];
      y[t * out + o] = s;
    }
  }
  return y;
}

export function layerNorm(x, T, C, weight, bias, eps) {  // (T, C) → (T, C)：每个位置减均值、除以标准差（有偏方差）
  const y = new Float32Array(T * C);
  for (let t = 0; t < T; t++) {
    let mean = 0, v = 0;
    for (let c = 0; c < C; c++) mean += x[t * C + c];
    mean /= C;
    for (let c = 0; c < C; c++) { const d = x[t * C + c] - mean; v += d * d; }
    const inv = 1 / Math.sqrt(v / C + eps);
    for (let c = 0; c < C; c++) y[t * C + c] = (x[t * C + c] - mean) * inv * weight.data[c] + bias.data[c];
  }
  return y;
}

function erf(x) {                                         // Abramowitz–Stegun 7.1.26 的高精度版（误差 < 1.2e-7）
  const z = Math.abs(x), t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - r : r - 1;
}

export function gelu(x) {                                 // torch.nn.functional.gelu（精确版）：x·Φ(x)
  const y = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = 0.5 * x[i] * (1 + erf(x[i] / Math.SQRT2));
  return y;
}

// ---------------------------------------------------------------- Transformer 的积木
export function embed(w, ids, P) {                        // ids (T,) → (T, C)：词向量 + 位置 P…P+T-1 的位置向量
  const C = w["tok_emb.weight"].shape[1], tok = w["tok_emb.weight"].data, pos = w["pos_emb.weight"].data;
  const x = new Float32Array(ids.length * C);
  ids.forEach((id, t) => {
    for (let c = 0; c < C; c++) x[t * C + c] = tok[id * C + c] + pos[(P + t) * C + c];
  });
  return x;
}

// 自注意力，带 KV 缓存：新来的 T 个位置接在缓存里的 P 个之后；位置 P+t 只能看 0…P+t（因果掩码）。
// x (T, C) → (T, C)；cache = { k: Float32Array(maxLen·C), v: …, length: P }，算完 length 变成 P + T。
export function multiHeadAttention(w, prefix, x, T, C, H, cache) {
  const D = C / H, P = cache.length;
  const q = linear(x, T, w[prefix + "q_proj.weight"], w[prefix + "q_proj.bias"]);   // (T, C)
  const k = linear(x, T, w[prefix + "k_proj.weight"], w[prefix + "k_proj.bias"]);
  const v = linear(x, T, w[prefix + "v_proj.weight"], w[prefix + "v_proj.bias"]);
  cache.k.set(k, P * C);
  cache.v.set(v, P * C);
  cache.length = P + T;
  const out = new Float32Array(T * C);                   // 各头的结果拼回 (T, C)
  const scale = 1 / Math.sqrt(D);
  const scores = new Float64Array(P + T);
  for (let h = 0; h < H; h++) {
    for (let t = 0; t < T; t++) {
      const S = P + t + 1;                                // 这个位置能看的键：0…P+t
      let max = -Infinity;
      for (let s = 0; s < S; s++) {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[t * C + h * D + d] * cache.k[s * C + h * D + d];
        scores[s] = dot * scale;
        if (scores[s] > max) max = scores[s];
      }
      let sum = 0;
      for (let s = 0; s < S; s++) { scores[s] = Math.exp(scores[s] - max); sum += scores[s]; }
      for (let d = 0; d < D; d++) {
        let acc = 0;
        for (let s = 0; s < S; s++) acc += scores[s] * cache.v[s * C + h * D + d];
        out[t * C + h * D + d] = acc / sum;
      }
    }
  }
  return linear(out, T, w[prefix + "out_proj.weight"], w[prefix + "out_proj.bias"]);
}

export function feedForward(w, prefix, x, T) {            // (T, C) → (T, F) → GELU → (T, C)
  const h = gelu(linear(x, T, w[prefix + "linear1.weight"], w[prefix + "linear1.bias"]));
  return linear(h, T, w[prefix + "linear2.weight"], w[prefix + "linear2.bias"]);
}

export function encoderLayer(w, i, x, T, cfg, cache) {   // pre-LN：x = x + Attn(LN(x))；x = x + FFN(LN(x))
  const C = cfg.d_model, p = `layers.${i}.`;
  const a = multiHeadAttention(w, p + "self_attn.", layerNorm(x, T, C, w[p + "norm1.weight"], w[p + "norm1.bias"], cfg.eps),
    T, C, cfg.n_heads, cache);
  const y = new Float32Array(x.length);
  for (let j = 0; j < x.length; j++) y[j] = x[j] + a[j];
  const f = feedForward(w, p + "ffn.", layerNorm(y, T, C, w[p + "norm2.weight"], w[p + "norm2.bias"], cfg.eps), T);
  for (let j = 0; j < y.length; j++) y[j] += f[j];
  return y;
}

// ids (T,) 接在缓存之后 → 最后一个位置的 logits (V,)：末尾的 LayerNorm，再乘词向量表（输出层与它共享权重）
export function gptForward(model, ids, cache) {
  const { w, cfg } = model, C = cfg.d_model, T = ids.length;
  if (cache.length + T > cfg.max_len) {
    throw new Error(`位置数超过 max_len=${cfg.max_len}：已缓存 ${cache.length} 个、这次又给了 ${T} 个。`);
  }
  let x = embed(w, ids, cache.length);
  for (let i = 0; i < cfg.n_layers; i++) x = encoderLayer(w, i, x, T, cfg, cache.layers[i]);
  const last = layerNorm(x.subarray((T - 1) * C), 1, C, w["norm.weight"], w["norm.bias"], cfg.eps);
  return linear(last, 1, w["tok_emb.weight"], null);      // (V,)
}

function newCache(cfg) {
  const size = cfg.max_len * cfg.d_model;
  const layers = Array.from({ length: cfg.n_layers }, () => ({ k: new Float32Array(size), v: new Float32Array(size), length: 0 }));
  return { layers, get length() { return layers[0].length; } };
}

// ---------------------------------------------------------------- 抽样（sampling.sample_next 的规则）
function mulberry32(seed) {                              // 可复现的小随机数发生器（同一个 seed 同一串数）
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ↔ sampling.apply_sampling_rules(...).softmax()：温度 → top-k → top-p 之后留下的 token 与它们的概率
export function applySamplingRules(logits, { temperature = 1, top_k = null, top_p = null } = {}) {
  if (!(temperature > 0)) throw new Error(`temperature 应 > 0（0 是贪心，不走这里），实际为 ${temperature}。`);
  const order = Array.from(logits.keys()).filter((i) => logits[i] > -Infinity).sort((a, b) => logits[b] - logits[a] || a - b);
  let kept = order;                                       // top-k：与第 k 名打分相同的都留下（sampling.top_k_filter）
  if (top_k) { const kth = logits[order[Math.min(top_k, order.length) - 1]]; kept = order.filter((i) => logits[i] >= kth); }
  const max = logits[kept[0]];
  let probs = kept.map((i) => Math.exp((logits[i] - max) / temperature));
  let total = probs.reduce((s, p) => s + p, 0);
  probs = probs.map((p) => p / total);
  if (top_p !== null && top_p < 1) {                       // 比它更可能的那些累计不到 top_p 的留下（sampling.top_p_filter）
    let acc = 0, n = 0;
    while (n < probs.length && (n === 0 || acc < top_p)) acc += probs[n++];
    kept = kept.slice(0, n);
    probs = probs.slice(0, n);
    total = probs.reduce((s, p) => s + p, 0);
    probs = probs.map((p) => p / total);
  }
  return { ids: kept, probs };
}

export function sampleNext(logits, options = {}, random = Math.random) {   // ↔ sampling.sample_next（一行）
  if (options.temperature === 0) {                        // 贪心：argmax（并列时取最小的 id，与 torch.argmax 相同）
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    return best;
  }
  const { ids, probs } = applySamplingRules(logits, options);
  let r = random(), j = 0;
  while (j < probs.length - 1 && r >= probs[j]) r -= probs[j++];
  return ids[j];
}

// ---------------------------------------------------------------- 模型对象
function checkIds(ids, cfg) {
  if (!Array.isArray(ids) && !ArrayBuffer.isView(ids)) throw new Error(`ids 应为整数数组，实际为 ${typeof ids}。`);
  if (ids.length === 0) throw new Error("ids 至少要有 1 个位置。");
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= cfg.vocab_size) {
      throw new Error(`ids 应在词表范围 0…${cfg.vocab_size - 1} 之内，实际有 ${id}。`);
    }
  }
  if (ids.length > cfg.max_len) throw new Error(`ids 有 ${ids.length} 个位置，超过了模型的 max_len=${cfg.max_len}。`);
}

function gptModel(name, w, metadata) {
  const cfg = JSON.parse(metadata.config);
  const vocab = JSON.parse(metadata.vocab);
  const stoi = new Map(vocab.itos.map((ch, i) => [ch, i]));
  const model = { w, cfg };
  return {
    name, config: cfg, itos: vocab.itos, sourceSha256: metadata.source_sha256,
    encode(text) {                                        // ↔ CharVocab.encode：每个字（码位）一个 id，字表外的记作 □
      if (typeof text !== "string") throw new Error(`text 应为字符串，实际为 ${typeof text}。`);
      return Array.from(text, (ch) => (stoi.has(ch) ? stoi.get(ch) : vocab.unk_id));
    },
    decode(ids) { return Array.from(ids, (i) => vocab.itos[i]).join(""); },
    logits(ids) {                                         // ↔ model(torch.tensor([ids]))[0, -1]
      checkIds(ids, cfg);
      return gptForward(model, Array.from(ids), newCache(cfg));
    },
    // guidance_scale、negative_prompt_ids ↔ gpt.generate 的无分类器引导：每一步在反面提示之后也算一遍 u，
    // 用 u + γ·(c − u) 代替 c（sampling.guide_logits），反面那一行接着写同样的 token
    generate(ids, n, { temperature = 1, top_k = null, top_p = null, seed = 0, suppress_ids = [],
      guidance_scale = 1, negative_prompt_ids = null } = {}) {
      checkIds(ids, cfg);
      if (!Number.isInteger(n) || n < 0) throw new Error(`n 应为 ≥ 0 的整数，实际为 ${n}。`);
      if (ids.length + n > cfg.max_len) {
        throw new Error(`提示 ${ids.length} 个 token 加上要生成的 ${n} 个，超过了模型的 max_len=${cfg.max_len}。`);
      }
      if (negative_prompt_ids !== null) {
        checkIds(negative_prompt_ids, cfg);
        if (negative_prompt_ids.length !== ids.length) {
          throw new Error(`negative_prompt_ids 应与提示一样长（${ids.length} 个），实际 ${negative_prompt_ids.length} 个。`);
        }
      } else if (guidance_scale !== 1) {
        throw new Error(`guidance_scale=${guidance_scale} 需要同时给出 negative_prompt_ids（反面提示）。`);
      }
      const out = Array.from(ids), cache = newCache(cfg), random = mulberry32(seed);
      const negCache = negative_prompt_ids === null ? null : newCache(cfg);
      let step = out.slice(), negStep = negCache ? Array.from(negative_prompt_ids) : null;
      for (let i = 0; i < n; i++) {                       // 有缓存：第一步送整段提示，之后每步只送新的一个
        let logits = gptForward(model, step, cache);
        if (negCache) {
          const u = gptForward(model, negStep, negCache);
          logits = logits.map((c, j) => u[j] + guidance_scale * (c - u[j]));
        }
        for (const s of suppress_ids) logits[s] = -Infinity;
        const next = sampleNext(logits, { temperature, top_k, top_p }, random);
        out.push(next);
        step = [next];
        negStep = [next];
      }
      return out;
    },
  };
}

const cache = new Map();

export function load(name) {                              // 第一次调用时下载权重；同一个模型只下载一次
  if (!cache.has(name)) {
    cache.set(name, (async () => {
      const response = await fetch(new URL(`${name}.safetensors`, MODELS_URL));
      if (!response.ok) throw new Error(`没有找到模型 ${name} 的权重（${response.status}）：网站是用 make book 构建的吗？`);
      const { tensors, metadata } = parseSafetensors(await response.arrayBuffer());
      if (metadata.kind !== "gpt") throw new Error(`模型 ${name} 的种类 ${metadata.kind} 还不能在浏览器里运行。`);
      return gptModel(name, tensors, metadata);
    })());
    cache.get(name).catch(() => cache.delete(name));     // 下载失败的下次重试
  }
  return cache.get(name);
}

window.tfcourse = window.tfcourse || {};
window.tfcourse.models = { load };
