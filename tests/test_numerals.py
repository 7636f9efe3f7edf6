"""第 10 章的数字读法任务：读法按课本的读零规则（与 cn2an 只差文档写明的一处"零"）；词表、编码、批处理；
不重叠的训练/测试划分。"""
import collections
import dataclasses
import random
import time

import cn2an
import numpy as np
import pytest
import torch

from tfcourse.data.numerals import (BOS_ID, EOS_ID, PAD_ID, SOURCE_TOKENS, TARGET_TOKENS, collate,
                                    decode_target, encode_source, encode_target, make_splits,
                                    sample_numbers, to_chinese_reading, tricky_numbers)

# 手工核对过的读法（约定见 numerals 模块说明）
HAND_CHECKED = {
    0: "零", 15: "十五", 110: "一百一十", 1001: "一千零一", 1010: "一千零一十", 2000: "二千",
    10010: "一万零一十", 10086: "一万零八十六", 100000: "十万", 205000: "二十万五千",
    1000001: "一百万零一", 10000100: "一千万零一百", 10001000: "一千万一千", 20000002: "二千万零二",
    100000010: "一亿零一十", 100001000: "一亿零一千", 100010000: "一亿零一万", 200000000: "二亿",
    10**9: "十亿", 1010101010: "十亿一千零一十万一千零一十", 56900002203: "五百六十九亿零二千二百零三",
    100000001000: "一千亿零一千", 10**12: "一万亿", 10**13: "十万亿",
    1000100000000: "一万零一亿", 1000000010000: "一万亿零一万", 1000010000000: "一万亿零一千万",
    1000000001000: "一万亿零一千", 10**15: "一千万亿",
    10**16 - 1: "九千九百九十九万九千九百九十九亿九千九百九十九万九千九百九十九",
}


def _levels(n):
    """从高到低的各级（每级 4 位数字的字符串），最高一级不补 0。"""
    s = str(n)
    head = len(s) % 4 or 4
    return [s[:head]] + [s[i:i + 4] for i in range(head, len(s), 4)]


def _zero_level_then_qian(n):
    """课本读"零"而 cn2an 不读的情形：两个非零的级之间隔着整级的 0，后一级的千位不是 0。"""
    nonzero = [k for k, level in enumerate(_levels(n)) if int(level)]
    levels = _levels(n)
    return any(b - a >= 2 and levels[b][0] != "0" for a, b in zip(nonzero, nonzero[1:]))


def _textbook_by_levels(n):
    """另一种写法的课本读法（测试用的参照）：一级一级地读，再在级与级之间按规则补"零"。"""
    if n == 0:
        return "零"
    levels = _levels(n)
    top = len(levels) - 1                                   # 最高一级的级号：0 个级，1 万级，2 亿级，3 万亿级
    units = {0: "", 1: "万", 2: "亿", 3: "万"}
    parts, last = [], None                                  # last：上一个非零的级的级号
    for k, level in enumerate(levels):
        g = top - k
        if not int(level):
            continue
        digits = level.lstrip("0") if k == 0 else level
        text, gap = "", k > 0 and level[0] == "0"           # 级内打头的 0（不是第一级）要读零
        for j, c in enumerate(digits):
            place = len(digits) - 1 - j
            if c == "0":
                gap = gap or bool(text)
                continue
            if gap:
                text += "零"
                gap = False
            ten = c == "1" and place == 1 and k == 0 and j == 0
            text += ("" if ten else "零一二三四五六七八九"[int(c)]) + ("", "十", "百", "千")[place]
        if last is not None and last - g >= 2 and not text.startswith("零"):
            text = "零" + text                               # 中间隔着整级的 0
        unit = units[g] + ("亿" if g == 3 and not int(levels[k + 1]) else "")   # 亿级全 0 时万亿级带"万亿"
        parts.append(text + unit)
        last = g
    return "".join(parts)


def _cn2an_textbook(n):
    """cn2an 的读法补上文档写明的那个"零"（读法里最多一个"亿"，零就补在它后面）。"""
    reading = cn2an.an2cn(n)
    return reading.replace("亿", "亿零") if _zero_level_then_qian(n) else reading


def _random_numbers(k, seed):
    rng = random.Random(seed)
    uniform = [rng.randrange(10 ** (d - 1), 10 ** d) for d in (rng.randint(1, 16) for _ in range(k))]
    zero_heavy = sample_numbers(k, max_digits=16, zero_prob=0.6, generator=torch.Generator().manual_seed(seed))
    assert max(uniform) >= 10**15 and max(zero_heavy) >= 10**15    # 真的抽到了 16 位数
    return uniform + zero_heavy


@pytest.mark.parametrize("n, expected", sorted(HAND_CHECKED.items()))
def test_hand_checked_readings(n, expected):
    assert to_chinese_reading(n) == expected
    assert _cn2an_textbook(n) == expected                   # 参考实现补上那个"零"也这样读
    assert _textbook_by_levels(n) == expected


def test_cn2an_differs_exactly_by_the_documented_zero():
    assert cn2an.an2cn(56900002203) == "五百六十九亿二千二百零三"      # cn2an 不读整级 0 后的"零"
    assert cn2an.an2cn(100001000) == "一亿一千"
    assert [n for n in HAND_CHECKED if _zero_level_then_qian(n)] == [
        100001000, 56900002203, 100000001000, 1000010000000, 1000000001000]
    for n in _random_numbers(5_000, seed=3):
        ours, ref = to_chinese_reading(n), cn2an.an2cn(n)
        assert ours.replace("零", "") == ref.replace("零", ""), n            # 除"零"之外逐字相同
        assert (ours != ref) == _zero_level_then_qian(n), (n, ours, ref)   # 只在那一种情形不同


def test_matches_cn2an_for_every_number_below_100000():
    mismatches = [n for n in range(100_000) if to_chinese_reading(n) != cn2an.an2cn(n)]
    assert mismatches == []                                 # 五位以内没有整级的 0，与 cn2an 完全一致


def test_matches_cn2an_with_the_textbook_zero_on_random_numbers_up_to_1e16():
    numbers = _random_numbers(20_000, seed=0)
    assert sum(map(_zero_level_then_qian, numbers)) > 500   # 有分歧的情形抽到了足够多
    mismatches = [n for n in numbers if to_chinese_reading(n) != _cn2an_textbook(n)]
    assert mismatches == []


def test_textbook_zero_rule_property():
    """课本规则的性质：与逐级读的另一种写法一致；零不连读、不在末尾；每段连续的 0 至多读一个零，
    级末尾的 0 之外只要有 0 就读。"""
    numbers = list(range(0, 100_000, 7)) + _random_numbers(5_000, seed=1)
    for n in numbers:
        r = to_chinese_reading(n)
        assert r == _textbook_by_levels(n), n
        if n == 0:
            continue
        assert "零零" not in r and not r.endswith("零") and not r.startswith("零"), (n, r)
        s = str(n)
        runs = 0                                           # 该读零的 0 段：两个非零数字之间、含非"级末尾"的 0
        nonzero = [len(s) - 1 - i for i, c in enumerate(s) if c != "0"]   # 非零数字的位次，从高到低
        for q, p in zip(nonzero, nonzero[1:]):
            between = range(p + 1, q)                      # 中间那些 0 的位次
            # 全是前一个数字那一级末尾的 0（后一个数字在下一级）：不读
            level_tail = p // 4 != q // 4 and all(z // 4 == q // 4 for z in between)
            runs += bool(between) and not level_tail
        assert r.count("零") == runs, (n, r)


def test_matches_cn2an_on_tricky_numbers():
    tricky = tricky_numbers()
    assert len(set(tricky)) == len(tricky)
    assert {10, 11, 19, 100, 1000, 10000, 100000000, 1001, 10086, 100010000, 1000001,
            20000002, 100000010, 100001000, 56900002203} <= set(tricky)
    assert [to_chinese_reading(n) for n in tricky] == [_cn2an_textbook(n) for n in tricky]


def test_numpy_integers_are_accepted():
    assert to_chinese_reading(np.int64(10086)) == to_chinese_reading(np.int32(10086)) == "一万零八十六"
    assert encode_source(np.int64(105)) == encode_source(105)


def test_er_never_liang():
    readings = [to_chinese_reading(n) for n in list(range(0, 100_000, 7)) + [2 * 10**k for k in range(16)]]
    assert not any("两" in r for r in readings)
    assert [to_chinese_reading(2 * 10**k) for k in (3, 4, 8, 12)] == ["二千", "二万", "二亿", "二万亿"]


def test_shi_at_the_start_yi_shi_inside():
    for n in list(range(100_000)) + [10**k + 12345 for k in range(5, 16)]:
        r = to_chinese_reading(n)
        starts_with_ten = str(n)[0] == "1" and len(str(n)) % 4 == 2       # 最高位是（某一级的）十位上的 1
        assert r.startswith("十") == starts_with_ten, (n, r)
        assert all(r[i - 1] in "一二三四五六七八九" for i in range(1, len(r)) if r[i] == "十"), (n, r)   # 中间的十前面总有数字
    assert [to_chinese_reading(n) for n in (10, 19, 100000, 10**9, 10**13)] == ["十", "十九", "十万", "十亿", "十万亿"]
    assert [to_chinese_reading(n) for n in (110, 1010, 10010, 100000010)] == ["一百一十", "一千零一十", "一万零一十", "一亿零一十"]


@pytest.mark.parametrize("bad, shown", [
    (-5, "-5"), (10**16, "10000000000000000"), (3.0, "3.0"), ("12", "'12'"), (True, "True"), (None, "None"),
])
def test_bad_inputs_raise_chinese_errors_naming_the_value(bad, shown):
    with pytest.raises(ValueError, match="要读的数应") as info:
        to_chinese_reading(bad)
    assert shown in str(info.value)
    with pytest.raises(ValueError, match="要读的数应"):
        encode_source(bad)


def test_negative_message_reads_as_specified():
    with pytest.raises(ValueError, match="要读的数应为非负整数，实际为 -5"):
        to_chinese_reading(-5)


def test_vocabularies():
    assert SOURCE_TOKENS == ("<pad>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
    assert TARGET_TOKENS[:3] == ("<pad>", "<bos>", "<eos>") and "".join(TARGET_TOKENS[3:]) == "零一二三四五六七八九十百千万亿"
    assert (PAD_ID, BOS_ID, EOS_ID) == (0, 1, 2) and SOURCE_TOKENS[PAD_ID] == TARGET_TOKENS[PAD_ID] == "<pad>"
    every_char = set("".join(to_chinese_reading(n) for n in tricky_numbers()))
    assert every_char == set(TARGET_TOKENS[3:])             # 难例用到了目标词表里的每个字


def test_encode_decode_round_trip():
    numbers = list(tricky_numbers()) + sample_numbers(500, max_digits=16, generator=torch.Generator().manual_seed(2))
    for n in numbers:
        assert [SOURCE_TOKENS[i] for i in encode_source(n)] == list(str(n))
        text = to_chinese_reading(n)
        ids = encode_target(text)
        assert ids[0] == BOS_ID and ids[-1] == EOS_ID and len(ids) == len(text) + 2
        assert decode_target(ids) == text
        assert decode_target(torch.tensor(ids)) == text


def test_decode_stops_at_first_eos_and_skips_pad():
    ids = encode_target("一万零八十六")
    assert decode_target(ids + [PAD_ID, PAD_ID]) == "一万零八十六"
    assert decode_target(ids[:-1] + [EOS_ID] + encode_target("九")[1:]) == "一万零八十六"   # <eos> 之后的不要
    assert decode_target(ids[1:3] + [PAD_ID] + ids[3:]) == "一万零八十六"                  # 中间的 <pad> 跳过
    assert decode_target(ids[:-1]) == "一万零八十六"                                         # 没有 <eos> 就读到底


def test_bad_ids_and_text_raise():
    with pytest.raises(ValueError, match="99"):
        decode_target([BOS_ID, 99, EOS_ID])
    with pytest.raises(ValueError, match="-1"):
        decode_target(torch.tensor([BOS_ID, -1]))
    with pytest.raises(ValueError, match="一维"):
        decode_target(torch.zeros(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="两"):
        encode_target("两千")


def test_collate_shapes_padding_and_shift():
    numbers = [5, 10086, 100, 1010101010]
    src, tgt_in, tgt_out = collate(numbers)
    readings = [to_chinese_reading(n) for n in numbers]
    S, T = max(len(str(n)) for n in numbers), max(map(len, readings)) + 1
    assert src.shape == (4, S) and tgt_in.shape == tgt_out.shape == (4, T)
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == torch.int64
    for b, (n, text) in enumerate(zip(numbers, readings)):
        k = len(text) + 1                                    # 这一行的有效长度
        assert src[b, :len(str(n))].tolist() == encode_source(n)
        assert (src[b, len(str(n)):] == PAD_ID).all() and (tgt_in[b, k:] == PAD_ID).all() and (tgt_out[b, k:] == PAD_ID).all()
        assert tgt_in[b, 0] == BOS_ID and tgt_out[b, k - 1] == EOS_ID
        assert torch.equal(tgt_in[b, 1:k], tgt_out[b, :k - 1])   # 教师强制：tgt_out 是 tgt_in 左移一位
        assert decode_target(tgt_in[b]) == decode_target(tgt_out[b]) == text
    with pytest.raises(ValueError, match="至少要一个数"):
        collate([])


def test_sample_numbers_distribution():
    xs = sample_numbers(80_000, max_digits=8, zero_prob=0.3, generator=torch.Generator().manual_seed(0))
    assert len(xs) == 80_000 and all(0 <= x < 10**8 for x in xs)
    counts = collections.Counter(len(str(x)) for x in xs)
    assert sorted(counts) == list(range(1, 9))
    assert all(abs(c - 10_000) < 500 for c in counts.values()), counts      # 位数均匀：每种约 1/8
    assert collections.Counter(x for x in xs if x < 10).keys() == set(range(10))   # 一位数里有 0
    rest = "".join(str(x)[1:] for x in xs)
    assert abs(rest.count("0") / len(rest) - 0.3) < 0.01                     # 首位之外 0 的比例 ≈ zero_prob
    assert set(rest) == set("0123456789")
    assert sum(str(x)[-5:-3] == "00" for x in xs if x >= 10**5) > 2000     # 跨万级边界的连续 0 很常见
    same = sample_numbers(1000, generator=torch.Generator().manual_seed(0))
    assert same == sample_numbers(1000, generator=torch.Generator().manual_seed(0))
    assert same != sample_numbers(1000, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("kwargs, message", [
    ({"n": 0}, "样本数"), ({"n": 5, "max_digits": 17}, "max_digits"), ({"n": 5, "max_digits": 0}, "max_digits"),
    ({"n": 5, "zero_prob": 1.5}, "zero_prob"), ({"n": 5, "zero_prob": "0.3"}, "zero_prob"),
])
def test_sample_numbers_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sample_numbers(**kwargs)


def test_splits_are_disjoint_unique_deterministic_and_sized():
    s = make_splits(20_000, 2_000, max_digits=12, seed=0)
    assert len(s.train) == 20_000 and len(s.test) == 2_000
    assert len(set(s.train)) == 20_000 and len(set(s.test)) == 2_000
    assert not set(s.train) & set(s.test)                                   # 测试集的数训练时从没见过
    assert all(0 <= x < 10**12 for x in s.train + s.test)
    assert make_splits(20_000, 2_000, max_digits=12, seed=0) == s
    other = make_splits(20_000, 2_000, max_digits=12, seed=1)
    assert other.train != s.train and other.test != s.test
    counts = collections.Counter(len(str(x)) for x in s.train)
    long = [counts[L] for L in range(5, 13)]                                # 5 位以上的数多得用不完，位数应当均匀
    assert max(long) < 1.15 * min(long), counts
    assert counts[1] == 10                                                   # 一位数只有 10 个，去重后全在训练集里
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.train = ()


def test_splits_error_when_sizes_cannot_be_filled():
    with pytest.raises(ValueError, match="最多只有 10 个不同的数"):
        make_splits(50, 10, max_digits=1)
    with pytest.raises(ValueError, match="最多只有 28 个"):                  # zero_prob=1：0–9 加 两位、三位各 9 个
        make_splits(26, 3, max_digits=3, zero_prob=1.0)
    s = make_splits(25, 3, max_digits=3, zero_prob=1.0)                    # 恰好 28 个，可以凑齐
    assert set(s.train) | set(s.test) == set(range(10)) | {d * 10 for d in range(1, 10)} | {d * 100 for d in range(1, 10)}
    with pytest.raises(ValueError, match="凑不齐"):                          # 够数但几乎抽不到（如 999）
        make_splits(990, 5, max_digits=3, zero_prob=0.999)


def test_make_splits_is_fast():
    start = time.perf_counter()
    s = make_splits(100_000, 2_000)
    assert time.perf_counter() - start < 2.0
    assert len(s.train) == 100_000 and len(s.test) == 2_000
