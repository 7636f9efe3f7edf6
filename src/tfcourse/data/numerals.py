"""数字读法：把阿拉伯数字读成汉字（10086 → 一万零八十六），一个很小的翻译（translation）任务。第 10 章引入。

读法的约定（范围 0 ≤ n < 10¹⁶）。"零"按小学数学课本的读数规则。与参考实现 cn2an 0.5.24 的 `an2cn`
只差一处"零"（见下面"零"的第 3 种情形），其余逐字一致：

- **只用"二"，不用"两"**：2000 → 二千，200000000 → 二亿。口语里"千、万、亿"前多说"两"（两千、两万），
  十位和个位只用"二"（二十、十二），见吕叔湘主编《现代汉语八百词》的"二""两"条。本课程一律用"二"，
  让每个数只有一种读法（cn2an 也是这样）。
- **"十"与"一十"**：整个数的最高位是（某一级的）十位上的 1 时读"十"（10–19 读 十…；十万、十亿、十万亿）；
  在数的中间读"一十"（110 → 一百一十，1010 → 一千零一十，10010 → 一万零一十）。
- **级与单位**：从个位起每四位一级（个级、万级、亿级、万亿级，即万进制）。每个非零数字读出数字和它在级内的
  位（十、百、千）；一级读完带上这一级的单位（万、亿），整级都是 0 的级不带单位。
- **零**：课本的规则是"每级末尾的 0 都不读，其他数位上连续几个 0 都只读一个零"。整个数末尾的 0 不读；
  两个相邻的非零数字之间有 0 时，后一个非零数字前面读不读"零"，分三种情形：
  1. 后一个数字不在它那一级的千位上（它前面、同一级里就有 0，这些 0 不是级末尾的 0）：读一个"零"。
     1001 → 一千零一，10086 → 一万零八十六，1000001 → 一百万零一，100010000 → 一亿零一万。
  2. 后一个数字在千位上，中间的 0 全在前一级的末尾：不读。
     205000 → 二十万五千，1010101010 → 十亿一千零一十万一千零一十。
     （口语里也有人说"二十万零五千"，课本不读。）
  3. 后一个数字在千位上，但中间隔着整级都是 0 的级：整级的 0 不是"级末尾的 0"，读一个"零"。
     100001000 → 一亿零一千，56900002203 → 五百六十九亿零二千二百零三，1000010000000 → 一万亿零一千万。
     cn2an 在这一种情形不读"零"（一亿一千）；这是本课程与 cn2an 唯一的不同，测试逐个核对了这一点。
  连续的 0 不论跨过几级，最多只读一个"零"：100000010 → 一亿零一十。
- **亿以上**：万亿 = 万个亿，最高的八位先按万进制读出再加"亿"：10¹² → 一万亿，
  1000100000000 → 一万零一亿，1000000010000 → 一万亿零一万。
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

from .._checks import describe_shape, positive_int

__all__ = [
    "to_chinese_reading", "SOURCE_TOKENS", "TARGET_TOKENS", "PAD_ID", "BOS_ID", "EOS_ID",
    "encode_source", "encode_target", "decode_target", "collate",
    "sample_numbers", "NumeralSplits", "make_splits", "tricky_numbers",
]

MAX_DIGITS = 16                       # 读得出的数最多 16 位（到"千万亿"）
_DIGITS = "零一二三四五六七八九"
_SMALL_UNITS = ("", "十", "百", "千")   # 一级之内的位


def _check_number(n) -> int:
    """确认 n 是 0 ≤ n < 10¹⁶ 的整数（numpy 整数可以，bool 不行），返回 int。"""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"要读的数应为非负整数，实际为 {n!r}（类型 {type(n).__name__}）。")
    n = int(n)
    if n < 0:
        raise ValueError(f"要读的数应为非负整数，实际为 {n}。")
    if n >= 10 ** MAX_DIGITS:
        raise ValueError(f"要读的数应小于 10**{MAX_DIGITS}（最多 {MAX_DIGITS} 位），实际为 {n}（{len(str(n))} 位）。")
    return n


def to_chinese_reading(n) -> str:
    """非负整数 n（0 ≤ n < 10¹⁶）的汉字读法，如 10086 → 一万零八十六。约定见模块说明。"""
    n = _check_number(n)
    if n == 0:
        return "零"
    s = str(n)
    out = []
    prev = None                                        # 上一个非零数字的位次
    for i, ch in enumerate(s):
        p = len(s) - 1 - i                             # 这一位的位次：0 是个位
        d = int(ch)
        if d != 0:
            if prev is not None and prev > p + 1:      # 和上一个非零数字之间有 0
                skipped_level = prev // 4 - p // 4 >= 2    # 中间隔着整级的 0
                if p % 4 != 3 or skipped_level:        # 只有"全是上一级末尾的 0"时不读零
                    out.append("零")
            prev = p
            if not (d == 1 and p % 4 == 1 and i == 0):  # 最高位是十位上的 1：读"十"不读"一十"
                out.append(_DIGITS[d])
            out.append(_SMALL_UNITS[p % 4])
        if p == 4 and int(s[max(0, i - 3):i + 1]) > 0:   # 万级不全为 0 才带"万"
            out.append("万")
        elif p == 8:                                   # 有亿级以上的数字就带"亿"（万亿 = 万个亿）
            out.append("亿")
        elif p == 12 and int(s[max(0, i - 3):i + 1]) > 0:
            out.append("万")
    return "".join(out)


# ---------------------------------------------------------------- 词表与编码

SOURCE_TOKENS = ("<pad>",) + tuple("0123456789")
TARGET_TOKENS = ("<pad>", "<bos>", "<eos>") + tuple("零一二三四五六七八九十百千万亿")
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2          # 源、目标两边的 <pad> 都是 0；<bos>、<eos> 只在目标一边
_SOURCE_INDEX = {t: i for i, t in enumerate(SOURCE_TOKENS)}
_TARGET_INDEX = {t: i for i, t in enumerate(TARGET_TOKENS)}


def encode_source(n) -> list[int]:
    """源序列：n 的各位数字的编号（'0' → 1 … '9' → 10），不加 <bos>/<eos>。"""
    return [_SOURCE_INDEX[c] for c in str(_check_number(n))]


def encode_target(text: str) -> list[int]:
    """目标序列：<bos> + 每个汉字的编号 + <eos>。"""
    if not isinstance(text, str):
        raise ValueError(f"要编码的读法应为字符串，实际得到 {text!r}（类型 {type(text).__name__}）。")
    unknown = sorted({c for c in text if c not in _TARGET_INDEX})
    if unknown:
        raise ValueError(f"读法里只能有 {''.join(TARGET_TOKENS[3:])} 这些字，实际出现了 {''.join(unknown)}（在 {text!r} 里）。")
    return [BOS_ID] + [_TARGET_INDEX[c] for c in text] + [EOS_ID]


def decode_target(ids) -> str:
    """把目标编号变回汉字：跳过 <bos> 和 <pad>，遇到第一个 <eos> 就停。ids 是整数列表或一维张量。"""
    if isinstance(ids, torch.Tensor):
        if ids.dim() != 1:
            raise ValueError(f"decode_target 要一维的编号序列，实际形状为 {describe_shape(ids)}。")
        ids = ids.tolist()
    chars = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < len(TARGET_TOKENS):
            raise ValueError(f"目标编号应为 0 … {len(TARGET_TOKENS) - 1} 的整数，实际得到 {i!r}。")
        if i == EOS_ID:
            break
        if i not in (PAD_ID, BOS_ID):
            chars.append(TARGET_TOKENS[i])
    return "".join(chars)


def collate(numbers):
    """把一批数做成教师强制（teacher forcing）训练用的三个张量，右侧用 PAD_ID 补齐。

    返回 (src, tgt_in, tgt_out)，都是 int64：src (B, S) 是各位数字；
    tgt_in (B, T) = <bos> + 读法，tgt_out (B, T) = 读法 + <eos>，即 tgt_in 左移一位。
    """
    numbers = list(numbers)
    if not numbers:
        raise ValueError("collate 至少要一个数，实际得到空序列。")
    srcs = [encode_source(n) for n in numbers]
    tgts = [encode_target(to_chinese_reading(n)) for n in numbers]
    S, T = max(map(len, srcs)), max(map(len, tgts)) - 1
    src = torch.full((len(numbers), S), PAD_ID, dtype=torch.int64)        # (B, S)
    tgt_in = torch.full((len(numbers), T), PAD_ID, dtype=torch.int64)     # (B, T)
    tgt_out = torch.full((len(numbers), T), PAD_ID, dtype=torch.int64)    # (B, T)
    for b, (s, t) in enumerate(zip(srcs, tgts)):
        src[b, :len(s)] = torch.tensor(s)
        tgt_in[b, :len(t) - 1] = torch.tensor(t[:-1])
        tgt_out[b, :len(t) - 1] = torch.tensor(t[1:])
    return src, tgt_in, tgt_out


# ---------------------------------------------------------------- 抽样与划分

def _check_sampling(max_digits, zero_prob) -> tuple[int, float]:
    max_digits = positive_int(max_digits, "最多位数 max_digits")
    if max_digits > MAX_DIGITS:
        raise ValueError(f"最多位数 max_digits 应在 1 … {MAX_DIGITS} 之间，实际为 {max_digits}。")
    if isinstance(zero_prob, bool) or not isinstance(zero_prob, numbers.Real) or not 0 <= zero_prob <= 1:
        raise ValueError(f"零的概率 zero_prob 应为 0 … 1 之间的实数，实际得到 {zero_prob!r}。")
    return max_digits, float(zero_prob)


def _draw(n: int, max_digits: int, zero_prob: float, generator) -> list[int]:
    L = torch.randint(1, max_digits + 1, (n,), generator=generator)                  # (n,) 位数
    first = torch.randint(1, 10, (n,), generator=generator)                           # 首位 1–9
    first = torch.where(L == 1, torch.randint(0, 10, (n,), generator=generator), first)   # 一位数可以是 0
    rest = torch.randint(1, 10, (n, max_digits), generator=generator)                 # (n, max_digits)
    rest = rest.masked_fill(torch.rand(n, max_digits, generator=generator) < zero_prob, 0)
    rest[:, 0] = first                                                                # 第 j 列是从左数第 j 位
    j = torch.arange(max_digits)
    exponent = L[:, None] - 1 - j                                                     # (n, max_digits)，负数表示这一位不存在
    place = torch.where(exponent >= 0, 10 ** exponent.clamp(min=0), 0)
    return (rest * place).sum(dim=1).tolist()


def sample_numbers(n: int, max_digits: int = 8, zero_prob: float = 0.3,
                   generator: torch.Generator | None = None) -> list[int]:
    """独立抽 n 个数（可能重复）。位数在 1 … max_digits 里均匀；首位 1–9 均匀（一位数是 0–9）；
    其余每位以 zero_prob 的概率是 0，否则 1–9 均匀——所以一级之内、跨级的连续 0 都常见。

    随机性全部来自 torch.Generator：同一个 generator 状态给出同样的数。
    """
    n = positive_int(n, "样本数 n")
    max_digits, zero_prob = _check_sampling(max_digits, zero_prob)
    return _draw(n, max_digits, zero_prob, generator)


@dataclass(frozen=True)
class NumeralSplits:
    """训练集与测试集：各自没有重复，测试集里的数一个也不在训练集里。"""
    train: tuple[int, ...]
    test: tuple[int, ...]


def _support_size(max_digits: int, zero_prob: float) -> int:
    """这个分布能抽到的不同的数有多少个。"""
    total = 10                                            # 一位数 0–9
    for L in range(2, max_digits + 1):
        if zero_prob == 0:
            total += 9 ** L                               # 没有 0
        elif zero_prob == 1:
            total += 9                                    # 首位之后全是 0
        else:
            total += 9 * 10 ** (L - 1)
    return total


def make_splits(n_train: int, n_test: int, max_digits: int = 8, zero_prob: float = 0.3,
                seed: int = 0) -> NumeralSplits:
    """按 `sample_numbers` 的分布抽出不重复的训练集和测试集，测试集的数都没在训练集里出现过。

    先凑训练集，再凑测试集（跳过训练集里有的数）。短的数总共没几个（一位数只有 10 个），
    会先被训练集占满，所以两边的位数分布都偏向长的数，测试集尤其如此。同一个 seed 给出同样的划分。
    """
    n_train = positive_int(n_train, "训练集大小 n_train")
    n_test = positive_int(n_test, "测试集大小 n_test")
    max_digits, zero_prob = _check_sampling(max_digits, zero_prob)
    available = _support_size(max_digits, zero_prob)
    if n_train + n_test > available:
        raise ValueError(f"max_digits={max_digits}、zero_prob={zero_prob} 时最多只有 {available} 个不同的数，"
                         f"凑不齐训练集 {n_train} + 测试集 {n_test} = {n_train + n_test} 个。")
    gen = torch.Generator().manual_seed(int(seed))
    train: dict[int, None] = {}                           # dict 去重且保持抽到的顺序
    test: dict[int, None] = {}
    budget = 50 * (n_train + n_test) + 100_000            # 有的数概率极小，抽这么多次还凑不齐就放弃
    drawn = 0
    while len(test) < n_test:
        if drawn >= budget:
            raise ValueError(f"抽了 {drawn} 次仍凑不齐：训练集 {len(train)}/{n_train}，测试集 {len(test)}/{n_test}"
                             f"（max_digits={max_digits}、zero_prob={zero_prob} 下有些数几乎抽不到）；"
                             f"请减小 n_train、n_test，或增大 max_digits。")
        chunk = max(4096, n_train + n_test - len(train) - len(test))
        for x in _draw(chunk, max_digits, zero_prob, gen):
            if len(train) < n_train:
                train[x] = None
            elif x not in train:
                test[x] = None
                if len(test) == n_test:
                    break
        drawn += chunk
    return NumeralSplits(train=tuple(train), test=tuple(test))


def tricky_numbers() -> tuple[int, ...]:
    """手挑的难例，用来单独报告正确率：十几、整数、一级内的 0、跨万/亿的 0、级末尾的 0、整级的 0、
    十与一十、二不读两、亿以上。"""
    return (
        0, 2, 10, 11, 15, 19, 20, 100, 110, 1000, 10000, 100000, 100000000,         # 十几与整数
        101, 1001, 1010, 2002, 10086, 10010, 10100,                                   # 一级之内的 0
        100001, 1000001, 20000002, 100000010, 100010000, 100100000, 10000100, 700000007,         # 跨万、亿的 0
        205000, 10001000, 30004000, 1010101010,                                                 # 级末尾的 0 不读
        100001000, 56900002203,                                                                 # 整级的 0 后接千位：读零
        200000000, 2000, 22222222,                                                    # 二，不是两
        100000000000, 1000000000000, 1000100000000, 1000000010000, 10**15, 10**16 - 1,   # 亿以上
    )
