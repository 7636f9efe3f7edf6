// 课程模型的浏览器运行时：在读者的浏览器里、不要 Python，用课程自己训练的权重算 logits、接着写。
// ES 模块，没有第三方代码。网站上它是 _static/tfcourse/runtime.js，每一页都加载；权重是网站自己的文件
// （_static/tfcourse/models/NAME.safetensors，make book 时由 tfcourse.webmodels 从检查点导出），第一次 load 时才下载。
// Jupyter / Colab / Binder 里没有网站：小部件向 Python 要这份源码和权重（见 widgets/static/_live.js），
// 用 fromSafetensors 建模型，不碰 window.tfcourse。
//
// 每个函数按它对照的 Python 命名，形状写在注释里（T 个位置、C = d_model、H 个头、D = C / H、V 个 token），
// 读者可以把两边并排看：
//   embed            ↔ gpt.GPT.forward 的 tok_emb(ids) + pos_emb.weight[P:P+T]
//   layerNorm        ↔ torch.nn.LayerNorm
//   linear           ↔ torch.nn.Linear（乘加在支持 WebAssembly SIMD 的浏览器里走 simdKernels 的快路）
//   multiHeadAttention ↔ attention.MultiHeadAttention（因果掩码或填充掩码；GPT 用 KV 缓存）
//   feedForward      ↔ layers.FeedForward（GELU）
//   encoderLayer     ↔ layers.EncoderLayer（GPT 是 norm_first=True 的 pre-LN，BERT 是 post-LN）
//   gptForward       ↔ gpt.GPT.forward(ids, cache, last_only=True)
//   rmsNorm、ropeTable + applyRope、swiGLU、groupedQueryAttention、llamaBlock、llamaForward
//                    ↔ llama.RMSNorm、rope_cos_sin + apply_rope、SwiGLU、GroupedQueryAttention、LlamaBlock、
//                      LlamaGPT.forward（附录 A 的 gpt-zh-llama）
//   generate         ↔ gpt.generate（temperature = 0 是贪心；温度、top-k、top-p、suppress_ids、无分类器引导）
//   bertEmbed        ↔ bert.BertModel.embed（词向量 + 段向量 + 位置向量 → LayerNorm）
//   bertForward      ↔ bert.BertModel.forward；mlmHead ↔ bert.BertForMaskedLM.head
//   classifierForward ↔ classify.BertClassifier.forward（平均池化 → 线性层）
// 契约：window.tfcourse.models.load(name)
//   "gpt-zh"、"gpt-zh-ctrl"、"gpt-zh-llama" → { encode(text), logits(ids), generate(ids, n, options) }
//   "bert-zh"               → { encode(text), logits(ids)：T × V 的掩码语言模型 logits（按行摊平），
//                               logitsAt(ids, t)：只要第 t 行，attention(text) → { tokens, weights: L × H × T × T } }
//   "cls-bert"              → { encode(text), probPositive(text), attention(text) → { tokens, weights: H × T × T } }

// 权重所在的目录：本模块是网站的文件时，就在它旁边的 models/；从 blob: 地址加载（Jupyter）时没有这个目录
const MODELS_URL = (() => {
  try {
    const url = new URL("./models/", import.meta.url);
    return /^(https?|file):$/.test(url.protocol) ? url : null;
  } catch (e) { return null; }
})();

// ---------------------------------------------------------------- 读 safetensors（float16 → float32）
function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;                  // 次正规数
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

let HALVES = null;                                        // 全部 65536 个 float16 的值：查表比逐个换算快
function halfTable() {
  if (!HALVES) {
    HALVES = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) HALVES[h] = halfToFloat(h);
  }
  return HALVES;
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
    const data = new Float32Array(halves.length), table = halfTable();
    for (let i = 0; i < halves.length; i++) data[i] = table[halves[i]];
    tensors[name] = { shape: info.shape, data };
  }
  return { tensors, metadata: header.__metadata__ || {} };
}

// ---------------------------------------------------------------- 基本运算（x 是按行存的 (T, C) 矩阵）
export function linear(x, T, weight, bias) {             // (T, in) · Wᵀ + b → (T, out)；W 的形状 (out, in)
  const [out, inF] = weight.shape, b = bias ? bias.data : null;
  // 浏览器支持 WebAssembly SIMD 时走快路 weight.kernel（见下面的 simdKernels），否则用 JavaScript 逐个乘加
  const y = weight.kernel ? weight.kernel(x, T) : matmul(x, T, weight.data, out, inF);
  if (b) for (let t = 0; t < T; t++) for (let o = 0; o < out; o++) y[t * out + o] += b[o];
  return y;
}

function matmul(x, T, W, out, inF) {                     // (T, in) · Wᵀ → (T, out)
  const y = new Float32Array(T * out);
  const T4 = T >= 4 ? blockedRows(x, T, W, out, inF, y) : 0;   // 一次算 4 行 × 4 个输出（见下）
  for (let t = T4; t < T; t++) {                       // 其余的行：逐个输出做点积
    const xo = t * inF;
    for (let o = 0; o < out; o++) {
      let s = 0;
      const wo = o * inF;
      for (let i = 0; i < inF; i++) s += x[xo + i] * W[wo + i];
      y[t * out + o] = s;
    }
  }
  return y;
}

function blockedRows(x, T, W, out, inF, y) {
  const T4 = T - (T % 4), O4 = out - (out % 4);
  for (let t = 0; t < T4; t += 4) {
    const x0 = t * inF, x1 = x0 + inF, x2 = x1 + inF, x3 = x2 + inF;
    for (let o = 0; o < O4; o += 4) {
      const w0 = o * inF, w1 = w0 + inF, w2 = w1 + inF, w3 = w2 + inF;
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      let s20 = 0, s21 = 0, s22 = 0, s23 = 0, s30 = 0, s31 = 0, s32 = 0, s33 = 0;
      for (let i = 0; i < inF; i++) {
        const a0 = x[x0 + i], a1 = x[x1 + i], a2 = x[x2 + i], a3 = x[x3 + i];
        const c0 = W[w0 + i], c1 = W[w1 + i], c2 = W[w2 + i], c3 = W[w3 + i];
        s00 += a0 * c0; s01 += a0 * c1; s02 += a0 * c2; s03 += a0 * c3;
        s10 += a1 * c0; s11 += a1 * c1; s12 += a1 * c2; s13 += a1 * c3;
        s20 += a2 * c0; s21 += a2 * c1; s22 += a2 * c2; s23 += a2 * c3;
        s30 += a3 * c0; s31 += a3 * c1; s32 += a3 * c2; s33 += a3 * c3;
      }
      let r = t * out + o;
      y[r] = s00; y[r + 1] = s01; y[r + 2] = s02; y[r + 3] = s03; r += out;
      y[r] = s10; y[r + 1] = s11; y[r + 2] = s12; y[r + 3] = s13; r += out;
      y[r] = s20; y[r + 1] = s21; y[r + 2] = s22; y[r + 3] = s23; r += out;
      y[r] = s30; y[r + 1] = s31; y[r + 2] = s32; y[r + 3] = s33;
    }
    for (let tt = t; tt < t + 4; tt++) {                 // 这 4 行里剩下的 out % 4 个输出
      for (let o = O4; o < out; o++) {
        let s = 0;
        for (let i = 0; i < inF; i++) s += x[tt * inF + i] * W[o * inF + i];
        y[tt * out + o] = s;
      }
    }
  }
  return T4;
}

// ---------------------------------------------------------------- linear 的快路：WebAssembly SIMD
// BERT 读一条评论，六成时间花在 linear 的乘加上。浏览器支持 WebAssembly SIMD 时（Chrome 91、Firefox 89、
// Safari 16.4 起），每个模型的矩阵再复制一份进 WebAssembly 的内存，由下面逐字节写出的小函数（600 来个字节，
// 没有编译器，也没有第三方代码）一次乘 4 个 float32：
//   for t < T:  for o < out:  y[t, o] = Σ_i x[t, i]·W[o, i]
// i 每步走 4 个：4 个分量各自累加（float32），最后两两相加。和上面的 JavaScript 比，加法的顺序不同、
// 中间结果是 float32，差别在 1e-6 的量级（测试在 Chromium 里对两条路都和 torch 比）。
export const settings = { simd: true };                   // 设成 false：之后建的模型只走 JavaScript

const uleb = (n) => { const b = []; do { let c = n & 0x7f; n >>>= 7; if (n) c |= 0x80; b.push(c); } while (n); return b; };
const sleb = (n) => {
  const b = [];
  for (;;) {
    const c = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(c & 0x40)) || (n === -1 && (c & 0x40))) { b.push(c); return b; }
    b.push(c | 0x80);
  }
};
const wasmName = (s) => [...uleb(s.length), ...Array.from(s, (ch) => ch.charCodeAt(0))];
const wasmSection = (id, body) => [id, ...uleb(body.length), ...body];

function linearWasm() {                                   // WebAssembly 模块的字节：导出 linear(x, W, y, T, out, in)
  const [X, W, Y, T, OUT, IN] = [0, 1, 2, 3, 4, 5];                      // 参数：x、W、y 的字节地址，T、out、in
  const [t, o, i, xrow, w0, w1, w2, w3, stride, yp] = [6, 7, 8, 9, 10, 11, 12, 13, 14, 15];   // i32 局部变量
  const [a0, a1, a2, a3, xv] = [16, 17, 18, 19, 20];                   // v128 局部变量（各装 4 个 float32）
  const get = (k) => [0x20, ...uleb(k)], set = (k) => [0x21, ...uleb(k)], num = (n) => [0x41, ...sleb(n)];
  const ADD = 0x6a, MUL = 0x6c, LT_U = 0x49, GT_U = 0x4b, GE_U = 0x4f, END = 0x0b, FADD = 0x92;
  const block = [0x02, 0x40], loop = [0x03, 0x40], br = (d) => [0x0c, d], brIf = (d) => [0x0d, d];
  const load = [0xfd, 0x00, 2, 0], zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const vadd = [0xfd, 0xe4, 0x01], vmul = [0xfd, 0xe6, 0x01], lane = (k) => [0xfd, 0x1f, k];
  const store = (k) => [0x38, 2, 4 * k];                                // f32.store，地址再加 4k 个字节
  const sum4 = (a) => [...get(a), ...lane(0), ...get(a), ...lane(1), FADD,       // (a₀ + a₁) + (a₂ + a₃)
    ...get(a), ...lane(2), ...get(a), ...lane(3), FADD, FADD];
  const inc = (k, n) => [...get(k), ...num(n), ADD, ...set(k)];
  const macc = (a, row) => [...get(a), ...get(xv), ...get(row), ...get(i), ADD, ...load, ...vmul, ...vadd, ...set(a)];
  const dots = (accs, rows) => [                          // a_k = Σ x[t, i:i+4]·W[o+k, i:i+4]，i 每步走 16 个字节
    ...accs.flatMap((a) => [...zero, ...set(a)]), ...num(0), ...set(i),
    ...loop, ...get(xrow), ...get(i), ADD, ...load, ...set(xv),
    ...accs.flatMap((a, k) => macc(a, rows[k])), ...inc(i, 16), ...get(i), ...get(stride), LT_U, ...brIf(0), END];
  const rowOf = (r) => [...get(W), ...get(o), ...get(stride), MUL, ADD, ...set(r)];   // r = W 的第 o 行
  const code = [
    ...get(IN), ...num(4), MUL, ...set(stride), ...get(Y), ...set(yp),
    ...block, ...loop,                                    // for t < T
    ...get(t), ...get(T), GE_U, ...brIf(1),
    ...get(X), ...get(t), ...get(stride), MUL, ADD, ...set(xrow), ...num(0), ...set(o),
    ...block, ...loop,                                    //   4 个输出一组：for o + 4 ≤ out
    ...get(o), ...num(4), ADD, ...get(OUT), GT_U, ...brIf(1), ...rowOf(w0),
    ...[[w0, w1], [w1, w2], [w2, w3]].flatMap(([p, q]) => [...get(p), ...get(stride), ADD, ...set(q)]),
    ...dots([a0, a1, a2, a3], [w0, w1, w2, w3]),
    ...[a0, a1, a2, a3].flatMap((a, k) => [...get(yp), ...sum4(a), ...store(k)]),
    ...inc(yp, 16), ...inc(o, 4), ...br(0), END, END,
    ...block, ...loop,                                    //   剩下的输出一个一个来：for o < out
    ...get(o), ...get(OUT), GE_U, ...brIf(1), ...rowOf(w0),
    ...dots([a0], [w0]), ...get(yp), ...sum4(a0), ...store(0),
    ...inc(yp, 4), ...inc(o, 1), ...br(0), END, END,
    ...inc(t, 1), ...br(0), END, END, END];
  const body = [2, 10, 0x7f, 5, 0x7b, ...code];           // 局部变量：10 个 i32、5 个 v128
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,            // "\0asm"，版本 1
    ...wasmSection(1, [1, 0x60, 6, ...new Array(6).fill(0x7f), 0]),     // 类型：(i32 × 6) → ()
    ...wasmSection(2, [1, ...wasmName("env"), ...wasmName("memory"), 0x02, 0x00, 1]),   // 导入内存
    ...wasmSection(3, [1, 0]),                                          // 一个函数，类型 0
    ...wasmSection(7, [1, ...wasmName("linear"), 0x00, 0]),             // 导出为 linear
    ...wasmSection(10, [1, ...uleb(body.length), ...body])]);
}

let LINEAR_WASM;                                          // 编译好的模块；null：这个浏览器不支持 SIMD
function linearModule() {
  if (LINEAR_WASM === undefined) {
    try {
      const bytes = linearWasm();
      LINEAR_WASM = typeof WebAssembly === "object" && WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    } catch (e) { LINEAR_WASM = null; }
  }
  return LINEAR_WASM;
}

// 给每个 (out, in) 的矩阵（in 是 4 的倍数）装上 kernel(x, T) → x·Wᵀ；不支持 SIMD 时什么也不做，返回 false
function simdKernels(tensors) {
  const module = settings.simd ? linearModule() : null;
  if (!module) return false;
  const mats = Object.values(tensors).filter((m) => m.shape.length === 2 && m.shape[1] % 4 === 0);
  let top = 0;                                            // 矩阵依次放好，之后是每次调用的 x 与 y
  for (const m of mats) { m.address = top; top += 4 * m.data.length; }
  const memory = new WebAssembly.Memory({ initial: Math.ceil((top + (1 << 20)) / 65536) });
  const heap = new Float32Array(memory.buffer);
  for (const m of mats) heap.set(m.data, m.address / 4);
  const kernel = new WebAssembly.Instance(module, { env: { memory } }).exports.linear;
  for (const m of mats) {
    m.kernel = (x, T) => {
      const [out, inF] = m.shape, xAt = top, yAt = top + 4 * T * inF, end = yAt + 4 * T * out;
      if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
      new Float32Array(memory.buffer, xAt, T * inF).set(x.subarray(0, T * inF));
      kernel(xAt, m.address, yAt, T, out, inF);
      return new Float32Array(memory.buffer.slice(yAt, end));
    };
  }
  return true;
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

// 自注意力。新来的 T 个位置接在缓存里的 P 个之后（GPT 的 KV 缓存；BERT 每次从空缓存开始，P = 0）。
// causal：位置 P+t 只能看 0…P+t（因果掩码）；否则看全部 P+T 个，keyMask[s] 为 false 的键不看（填充掩码）。
// x (T, C) → (T, C)；cache = { k: Float32Array(maxLen·C), v: …, length: P }，算完 length 变成 P + T。
// weightsOut：给了就把每个头的注意力权重写进去，(H, T, P+T) 按行摊平（↔ attention_weights）。
export function multiHeadAttention(w, prefix, x, T, C, H, cache, { causal = true, keyMask = null, weightsOut = null } = {}) {
  const D = C / H | 0, P = cache.length;                 // | 0：D 是整数（V8 这样才把下标当整数算）
  const q = linear(x, T, w[prefix + "q_proj.weight"], w[prefix + "q_proj.bias"]);   // (T, C)
  const k = linear(x, T, w[prefix + "k_proj.weight"], w[prefix + "k_proj.bias"]);
  const v = linear(x, T, w[prefix + "v_proj.weight"], w[prefix + "v_proj.bias"]);
  cache.k.set(k, P * C);
  cache.v.set(v, P * C);
  cache.length = P + T;
  const out = new Float32Array(T * C);                   // 各头的结果拼回 (T, C)
  const K = cache.k, Vc = cache.v, scale = 1 / Math.sqrt(D);
  const scores = new Float64Array(P + T), acc = new Float64Array(D);
  for (let h = 0; h < H; h++) {
    for (let t = 0; t < T; t++) {
      const S = causal ? P + t + 1 : P + T;               // 这个位置能看的键：0…S-1
      const qo = t * C + h * D;
      let max = -Infinity;
      for (let s = 0; s < S; s++) {                       // 打分：q·k / √D（被掩码挡住的记 −∞）
        if (keyMask && !keyMask[s]) { scores[s] = -Infinity; continue; }
        const ko = s * C + h * D;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[qo + d] * K[ko + d];
        scores[s] = dot * scale;
        if (scores[s] > max) max = scores[s];
      }
      let sum = 0;                                        // softmax：减最大值、取指数、归一化
      for (let s = 0; s < S; s++) { scores[s] = Math.exp(scores[s] - max); sum += scores[s]; }
      if (weightsOut) for (let s = 0; s < S; s++) weightsOut[(h * T + t) * (P + T) + s] = scores[s] / sum;
      acc.fill(0);                                        // 对值向量加权求和
      for (let s = 0; s < S; s++) {
        const p = scores[s], vo = s * C + h * D;
        if (p === 0) continue;
        for (let d = 0; d < D; d++) acc[d] += p * Vc[vo + d];
      }
      for (let d = 0; d < D; d++) out[qo + d] = acc[d] / sum;
    }
  }
  return linear(out, T, w[prefix + "out_proj.weight"], w[prefix + "out_proj.bias"]);
}

export function feedForward(w, prefix, x, T) {            // (T, C) → (T, F) → GELU → (T, C)
  const h = gelu(linear(x, T, w[prefix + "linear1.weight"], w[prefix + "linear1.bias"]));
  return linear(h, T, w[prefix + "linear2.weight"], w[prefix + "linear2.bias"]);
}

// pre-LN（cfg.norm_first，GPT）：x = x + Attn(LN(x))；x = x + FFN(LN(x))
// post-LN（BERT）：        x = LN(x + Attn(x))；x = LN(x + FFN(x))
export function encoderLayer(w, p, x, T, cfg, cache, attention = {}) {
  const C = cfg.d_model, eps = cfg.eps;
  const ln1 = (z) => layerNorm(z, T, C, w[p + "norm1.weight"], w[p + "norm1.bias"], eps);
  const ln2 = (z) => layerNorm(z, T, C, w[p + "norm2.weight"], w[p + "norm2.bias"], eps);
  const add = (z, f) => { const y = new Float32Array(z.length); for (let j = 0; j < z.length; j++) y[j] = z[j] + f[j]; return y; };
  if (cfg.norm_first) {
    const y = add(x, multiHeadAttention(w, p + "self_attn.", ln1(x), T, C, cfg.n_heads, cache, attention));
    return add(y, feedForward(w, p + "ffn.", ln2(y), T));
  }
  const y = ln1(add(x, multiHeadAttention(w, p + "self_attn.", x, T, C, cfg.n_heads, cache, attention)));
  return ln2(add(y, feedForward(w, p + "ffn.", y, T)));
}

// ids (T,) 接在缓存之后 → 最后一个位置的 logits (V,)：末尾的 LayerNorm，再乘词向量表（输出层与它共享权重）
export function gptForward(model, ids, cache) {
  const { w, cfg } = model, C = cfg.d_model, T = ids.length;
  if (cache.length + T > cfg.max_len) {
    throw new Error(`位置数超过 max_len=${cfg.max_len}：已缓存 ${cache.length} 个、这次又给了 ${T} 个。`);
  }
  let x = embed(w, ids, cache.length);
  for (let i = 0; i < cfg.n_layers; i++) x = encoderLayer(w, `layers.${i}.`, x, T, cfg, cache.layers[i]);
  const last = layerNorm(x.subarray((T - 1) * C), 1, C, w["norm.weight"], w["norm.bias"], cfg.eps);
  return linear(last, 1, w["tok_emb.weight"], null);      // (V,)
}

// ---------------------------------------------------------------- 今天的块（附录 A：gpt-zh-llama）
export function rmsNorm(x, T, C, weight, eps) {          // ↔ llama.RMSNorm：(T, C) → (T, C)，只除以均方根，不减均值
  const y = new Float32Array(T * C);
  for (let t = 0; t < T; t++) {
    let ms = 0;
    for (let c = 0; c < C; c++) ms += x[t * C + c] * x[t * C + c];
    const inv = 1 / Math.sqrt(ms / C + eps);
    for (let c = 0; c < C; c++) y[t * C + c] = x[t * C + c] * inv * weight.data[c];
  }
  return y;
}

// ↔ llama.rope_cos_sin：位置 P…P+T-1 的 cos、sin，各 (T, D/2)（"half" 排法的前后两半用同一组角度）。
// 与 torch 一样在 float32 里算频率和角度（Math.fround），角度大时两边的 cos、sin 才对得上
export function ropeTable(P, T, D, base) {
  const half = D / 2 | 0, cos = new Float32Array(T * half), sin = new Float32Array(T * half);
  for (let i = 0; i < half; i++) {
    const invFreq = Math.fround(1 / Math.fround(base ** Math.fround((2 * i) / D)));
    for (let t = 0; t < T; t++) {
      const angle = Math.fround((P + t) * invFreq);
      cos[t * half + i] = Math.cos(angle);
      sin[t * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

// ↔ llama.apply_rope(x, cos, sin, "half")：(T, n·D) 里每个头的第 i 维与第 i + D/2 维配成一对，转过位置的角度
export function applyRope(x, T, n, D, rope) {
  const half = D / 2 | 0, y = new Float32Array(x.length);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < n; h++) {
      const o = (t * n + h) * D;
      for (let i = 0; i < half; i++) {
        const c = rope.cos[t * half + i], s = rope.sin[t * half + i], a = x[o + i], b = x[o + half + i];
        y[o + i] = a * c - b * s;                          // x·cos + rotate_half(x)·sin 的前一半
        y[o + half + i] = b * c + a * s;                   // 后一半
      }
    }
  }
  return y;
}

export function silu(x) {                                 // torch.nn.functional.silu：x·σ(x)
  const y = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i] / (1 + Math.exp(-x[i]));
  return y;
}

export function swiGLU(w, prefix, x, T) {                 // ↔ llama.SwiGLU：down(silu(gate(x)) ⊙ up(x))
  const g = silu(linear(x, T, w[prefix + "gate_proj.weight"], null));
  const u = linear(x, T, w[prefix + "up_proj.weight"], null);
  for (let i = 0; i < g.length; i++) g[i] *= u[i];
  return linear(g, T, w[prefix + "down_proj.weight"], null);
}

// ↔ llama.GroupedQueryAttention：H 个查询头、G 组键值，第 h 个查询头用第 h / (H/G) 组；缓存只存 G 组（旋转之后的 k）。
// x (T, C) → (T, C)；cache = { k: Float32Array(maxLen·G·D), v: …, length: P }
export function groupedQueryAttention(w, prefix, x, T, cfg, cache, rope) {
  const H = cfg.n_heads, G = cfg.n_kv_heads, D = cfg.d_head, P = cache.length, rep = H / G | 0, KV = G * D;
  const q = applyRope(linear(x, T, w[prefix + "q_proj.weight"], null), T, H, D, rope);   // (T, H·D)
  const k = applyRope(linear(x, T, w[prefix + "k_proj.weight"], null), T, G, D, rope);   // (T, G·D)
  const v = linear(x, T, w[prefix + "v_proj.weight"], null);
  cache.k.set(k, P * KV);
  cache.v.set(v, P * KV);
  cache.length = P + T;
  const out = new Float32Array(T * H * D), K = cache.k, Vc = cache.v, scale = 1 / Math.sqrt(D);
  const scores = new Float64Array(P + T), acc = new Float64Array(D);
  for (let h = 0; h < H; h++) {
    const g = h / rep | 0;                                // 这个查询头所在的组
    for (let t = 0; t < T; t++) {
      const S = P + t + 1, qo = (t * H + h) * D;          // 因果：位置 P+t 只看 0…P+t
      let max = -Infinity;
      for (let s = 0; s < S; s++) {
        const ko = s * KV + g * D;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[qo + d] * K[ko + d];
        scores[s] = dot * scale;
        if (scores[s] > max) max = scores[s];
      }
      let sum = 0;
      for (let s = 0; s < S; s++) { scores[s] = Math.exp(scores[s] - max); sum += scores[s]; }
      acc.fill(0);
      for (let s = 0; s < S; s++) {
        const p = scores[s], vo = s * KV + g * D;
        for (let d = 0; d < D; d++) acc[d] += p * Vc[vo + d];
      }
      for (let d = 0; d < D; d++) out[qo + d] = acc[d] / sum;
    }
  }
  return linear(out, T, w[prefix + "o_proj.weight"], null);
}

// ↔ llama.LlamaBlock：x = x + Attn(RMSNorm(x))；x = x + SwiGLU(RMSNorm(x))
export function llamaBlock(w, p, x, T, cfg, cache, rope) {
  const C = cfg.d_model, add = (z, f) => { for (let j = 0; j < z.length; j++) z[j] += f[j]; return z; };
  const y = add(Float32Array.from(x), groupedQueryAttention(w, p + "attn.", rmsNorm(x, T, C, w[p + "attn_norm.weight"], cfg.eps), T, cfg, cache, rope));
  return add(y, swiGLU(w, p + "ffn.", rmsNorm(y, T, C, w[p + "ffn_norm.weight"], cfg.eps), T));
}

// ↔ llama.LlamaGPT.forward(ids, cache, last_only=True)：没有位置向量，位置只在注意力里旋转 q、k
export function llamaForward(model, ids, cache) {
  const { w, cfg } = model, C = cfg.d_model, T = ids.length;
  if (cache.length + T > cfg.max_len) {
    throw new Error(`位置数超过 max_len=${cfg.max_len}：已缓存 ${cache.length} 个、这次又给了 ${T} 个。`);
  }
  const tok = w["tok_emb.weight"].data, rope = ropeTable(cache.length, T, cfg.d_head, cfg.rope_base);
  let x = new Float32Array(T * C);
  ids.forEach((id, t) => x.set(tok.subarray(id * C, (id + 1) * C), t * C));
  for (let i = 0; i < cfg.n_layers; i++) x = llamaBlock(w, `layers.${i}.`, x, T, cfg, cache.layers[i], rope);
  const last = rmsNorm(x.subarray((T - 1) * C), 1, C, w["norm.weight"], cfg.eps);
  return linear(last, 1, w["tok_emb.weight"], null);      // (V,)
}

// ---------------------------------------------------------------- BERT（第 12、14 章）
export function bertEmbed(w, ids, cfg) {                  // ids (T,) → (T, C)：词向量 + 段向量（句子 A）+ 位置 0…T-1，再 LayerNorm
  const C = cfg.d_model, T = ids.length;
  const tok = w["bert.tok_emb.weight"].data, seg = w["bert.seg_emb.weight"].data, pos = w["bert.pos_emb.weight"].data;
  const x = new Float32Array(T * C);
  ids.forEach((id, t) => {
    for (let c = 0; c < C; c++) x[t * C + c] = tok[id * C + c] + seg[c] + pos[t * C + c];
  });
  return layerNorm(x, T, C, w["bert.emb_norm.weight"], w["bert.emb_norm.bias"], cfg.eps);
}

// ids (T,) → 最后一层的隐藏状态 (T, C)；双向注意力（没有因果掩码），mask[t] 为 false 的是填充。
// weights：给了数组，就把每一层的注意力权重 (H, T, T) 依次放进去。
export function bertForward(model, ids, mask = null, weights = null) {
  const { w, cfg } = model, T = ids.length, H = cfg.n_heads;
  let x = bertEmbed(w, ids, cfg);
  for (let i = 0; i < cfg.n_layers; i++) {
    const cache = { k: new Float32Array(T * cfg.d_model), v: new Float32Array(T * cfg.d_model), length: 0 };
    const weightsOut = weights ? new Float32Array(H * T * T) : null;
    x = encoderLayer(w, `bert.layers.${i}.`, x, T, cfg, cache, { causal: false, keyMask: mask, weightsOut });
    if (weights) weights.push(weightsOut);
  }
  return x;
}

export function mlmHead(w, h, T, cfg) {                   // (T, C) → dense → GELU → LayerNorm → ·词向量表ᵀ + 偏置 → (T, V)
  const z = layerNorm(gelu(linear(h, T, w["transform.weight"], w["transform.bias"])), T, cfg.d_model,
    w["transform_norm.weight"], w["transform_norm.bias"], cfg.eps);
  return linear(z, T, w["bert.tok_emb.weight"], w["decoder.bias"]);
}

export function classifierForward(model, ids, weights = null) {   // ids (T,) → 两类的 logits (2,)：真实 token 上平均 → 线性层
  const { w, cfg } = model, T = ids.length, C = cfg.d_model;
  const h = bertForward(model, ids, null, weights);
  const pooled = new Float32Array(C);
  for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) pooled[c] += h[t * C + c];
  for (let c = 0; c < C; c++) pooled[c] /= T;
  return linear(pooled, 1, w["head.weight"], w["head.bias"]);
}

function newCache(cfg) {                                  // 每层 max_len 个位置的 k、v（GQA 只存 n_kv_heads 组）
  const size = cfg.max_len * (cfg.n_kv_heads ? cfg.n_kv_heads * cfg.d_head : cfg.d_model);
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

function charTable(metadata) {                            // 字表：encode 与 CharVocab.encode 相同
  const vocab = JSON.parse(metadata.vocab);
  const stoi = new Map(vocab.itos.map((ch, i) => [ch, i]));
  return {
    itos: vocab.itos,
    id: (token) => stoi.get(token),
    known: (ch) => stoi.has(ch),                          // 这个字在不在字表里
    unkId: vocab.unk_id,
    encode(text) {                                        // 每个字（码位）一个 id，字表外的记作 [UNK]
      if (typeof text !== "string") throw new Error(`text 应为字符串，实际为 ${typeof text}。`);
      return Array.from(text, (ch) => (stoi.has(ch) ? stoi.get(ch) : vocab.unk_id));
    },
  };
}

function gptModel(name, w, metadata, forward = gptForward) {   // forward：gptForward 或 llamaForward（同一个接口）
  const cfg = JSON.parse(metadata.config), table = charTable(metadata), model = { w, cfg };
  const offensive = JSON.parse(metadata.offensive || "[]").map((r) => new RegExp(r.source, r.flags));
  return {
    name, config: cfg, itos: table.itos, sourceSha256: metadata.source_sha256, known: table.known,
    encode: table.encode,                                 // ↔ CharVocab.encode：每个字（码位）一个 id，字表外的记作 □
    id: table.id, unkId: table.unkId,
    samplingRules: applySamplingRules,                    // 温度 → top-k → top-p 之后留下的候选（小部件画图用）
    decode(ids) { return Array.from(ids, (i) => table.itos[i]).join(""); },
    maskOffensive(text) {                                 // ↔ safety.mask_offensive：命中词表的字换成同样多个 ＊
      const chars = Array.from(text);
      for (const re of offensive) {
        for (const m of text.matchAll(re)) {
          const start = Array.from(text.slice(0, m.index)).length;
          for (let i = 0; i < Array.from(m[0]).length; i++) chars[start + i] = "＊";
        }
      }
      return chars.join("");
    },
    logits(ids) {                                         // ↔ model(torch.tensor([ids]))[0, -1]
      checkIds(ids, cfg);
      return forward(model, Array.from(ids), newCache(cfg));
    },
    // guidance_scale、negative_prompt_ids ↔ gpt.generate 的无分类器引导：每一步在反面提示之后也算一遍 u，
    // 用 u + γ·(c − u) 代替 c（sampling.guide_logits），反面那一行接着写同样的 token
    // onStep(logits, next, i)：每一步抽样之后调用（logits 是引导、屏蔽之后的那一行）；返回 false 就写到这个 token 为止
    generate(ids, n, { temperature = 1, top_k = null, top_p = null, seed = 0, suppress_ids = [],
      guidance_scale = 1, negative_prompt_ids = null, onStep = null } = {}) {
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
        let logits = forward(model, step, cache);
        if (negCache) {
          const u = forward(model, negStep, negCache);
          logits = logits.map((c, j) => u[j] + guidance_scale * (c - u[j]));
        }
        for (const s of suppress_ids) logits[s] = -Infinity;
        const next = sampleNext(logits, { temperature, top_k, top_p }, random);
        if (onStep && onStep(logits, next, i) === false) { out.push(next); break; }   // onStep 返回 false：到此为止
        out.push(next);
        step = [next];
        negStep = [next];
      }
      return out;
    },
  };
}

function bertMlmModel(name, w, metadata) {               // "bert-zh"：第 12 章的中文 BERT 与它的预测头
  const cfg = JSON.parse(metadata.config), table = charTable(metadata), model = { w, cfg };
  return {
    name, config: cfg, itos: table.itos, sourceSha256: metadata.source_sha256, known: table.known, encode: table.encode,
    specials: Object.fromEntries(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map((t) => [t, table.id(t)])),
    logits(ids) {                                         // ↔ BertForMaskedLM(torch.tensor([ids]))[0]：(T, V) 按行摊平
      checkIds(ids, cfg);
      const T = ids.length;
      return mlmHead(w, bertForward(model, Array.from(ids)), T, cfg);
    },
    attention(text) {                                     // 读者的一句话：[CLS] + 前 max_len − 2 个字 + [SEP]，每层每个头的注意力
      if (typeof text !== "string" || !text) throw new Error("text 应为一句非空的话（字符串）。");
      const chars = Array.from(text).slice(0, cfg.max_len - 2).join("");
      const ids = [table.id("[CLS]"), ...table.encode(chars), table.id("[SEP]")], T = ids.length, layers = [];
      bertForward(model, ids, null, layers);
      const weights = layers.map((w) => Array.from({ length: cfg.n_heads }, (_, h) =>
        Array.from({ length: T }, (_, t) => Array.from(w.subarray((h * T + t) * T, (h * T + t + 1) * T)))));
      return { tokens: ids.map((i) => table.itos[i]), weights };   // weights: L × H × T × T
    },
    logitsAt(ids, position) {                             // 只要第 position 个位置的那一行 (V,)：第 12 章的填空只看被遮住的字
      checkIds(ids, cfg);
      if (!Number.isInteger(position) || position < 0 || position >= ids.length) {
        throw new Error(`position 应在 0…${ids.length - 1} 之内，实际为 ${position}。`);
      }
      const C = cfg.d_model, h = bertForward(model, Array.from(ids));
      return mlmHead(w, h.subarray(position * C, (position + 1) * C), 1, cfg);
    },
  };
}

function clsBertModel(name, w, metadata) {               // "cls-bert"：第 14 章在 bert-zh 上微调的评论分类器
  const cfg = JSON.parse(metadata.config), table = charTable(metadata), model = { w, cfg };
  const cls = table.id("[CLS]"), sep = table.id("[SEP]");
  const encode = (text) => {                              // ↔ BertCharEncoder.encode：[CLS] + 前 max_len − 2 个字 + [SEP]
    if (typeof text !== "string") throw new Error(`text 应为字符串，实际为 ${typeof text}。`);
    const chars = Array.from(text).slice(0, cfg.max_len - 2).join("");
    return [cls, ...(chars ? table.encode(chars) : []), sep];
  };
  const prob = (logits) => 1 / (1 + Math.exp(logits[0] - logits[1]));   // softmax 的第 1 类（好评）
  return {
    name, config: cfg, itos: table.itos, sourceSha256: metadata.source_sha256, known: table.known, encode,
    probPositive(text) { return prob(classifierForward(model, encode(text))); },   // ↔ predict_proba([text])[0]
    attention(text) {                                     // ↔ ReviewClassifier.attention(text)：最后一层，H × T × T
      if (typeof text !== "string" || !text) throw new Error("text 应为一条非空的评论（字符串）。");
      const ids = encode(text), T = ids.length, layers = [];
      const p = prob(classifierForward(model, ids, layers));
      const last = layers[layers.length - 1];
      const weights = Array.from({ length: cfg.n_heads }, (_, h) =>
        Array.from({ length: T }, (_, t) => Array.from(last.subarray((h * T + t) * T, (h * T + t + 1) * T))));
      return { tokens: ids.map((i) => table.itos[i]), weights, p_positive: p };
    },
  };
}

const BUILDERS = { gpt: gptModel, llama: (name, w, metadata) => gptModel(name, w, metadata, llamaForward),
  "bert-mlm": bertMlmModel, "bert-cls": clsBertModel };

export function fromSafetensors(name, buffer) {          // safetensors 的字节 → 模型对象
  const { tensors, metadata } = parseSafetensors(buffer);
  if (!BUILDERS[metadata.kind]) throw new Error(`模型 ${name} 的种类 ${metadata.kind} 还不能在浏览器里运行。`);
  if (metadata.model !== name) throw new Error(`这份权重是模型 ${metadata.model} 的，不是 ${name}。`);
  const kernel = simdKernels(tensors) ? "WebAssembly SIMD" : "JavaScript";
  return { ...BUILDERS[metadata.kind](name, tensors, metadata), kernel };   // kernel：linear 走的是哪条路
}

const cache = new Map();

export function load(name) {                              // 第一次调用时下载权重；同一个模型只下载一次
  if (!cache.has(name)) {
    cache.set(name, (async () => {
      if (!MODELS_URL) throw new Error("这里不是本书的网站，没有权重文件可下载：在笔记本里由小部件向 Python 要权重。");
      const response = await fetch(new URL(`${name}.safetensors`, MODELS_URL));
      if (!response.ok) throw new Error(`没有找到模型 ${name} 的权重（${response.status}）：网站是用 make book 构建的吗？`);
      return fromSafetensors(name, await response.arrayBuffer());
    })());
    cache.get(name).catch(() => cache.delete(name));     // 下载失败的下次重试
  }
  return cache.get(name);
}

if (MODELS_URL && typeof window !== "undefined") {
  window.tfcourse = window.tfcourse || {};
  window.tfcourse.models = { load };
}
