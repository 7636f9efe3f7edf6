"""第 10 章的数字读法任务：读法与参考实现 cn2an 逐字一致；词表、编码、批处理；不重叠的训练/测试划分。"""
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
    100000010: "一亿零一十", 100001000: "一亿一千", 100010000: "一亿零一万", 200000000: "二亿",
    10**9: "十亿", 1010101010: "十亿一千零一十万一千零一十", 10**12: "一万亿", 10**13: "十万亿",
    1000100000000: "一万零一亿", 1000000010000: "一万亿零一万", 10**15: "一千万亿",
    10**16 - 1: "九千九百九十九万九千九百九十九亿九千九百九十九万九千九百九十九",
}


@pytest.mark.parametrize("n, expected", sorted(HAND_CHECKED.items()))
def test_hand_checked_readings(n, expected):
    assert to_chinese_reading(n) == expected
    assert cn2an.an2cn(n) == expected                       # 参考实现也这样读


def test_matches_cn2an_for_every_number_below_100000():
    mismatches = [n for n in range(100_000) if to_chinese_reading(n) != cn2an.an2cn(n)]
    assert mismatches == []


def test_matches_cn2an_on_random_numbers_up_to_1e16():
    rng = random.Random(0)
    uniform = [rng.randrange(10 ** (d - 1), 10 ** d) for d in (rng.randint(1, 16) for _ in range(20_000))]
    zero_heavy = sample_numbers(20_000, max_digits=16, zero_prob=0.6, generator=torch.Generator().manual_seed(0))
    assert max(uniform) >= 10**15 and max(zero_heavy) >= 10**15    # 真的抽到了 16 位数
    mismatches = [n for n in uniform + zero_heavy if to_chinese_reading(n) != cn2an.an2cn(n)]
    assert mismatches == []


def test_matches_cn2an_on_tricky_numbers():
    tricky = tricky_numbers()
    assert len(set(tricky)) == len(tricky)
    assert {10, 11, 19, 100, 1000, 10000, 100000000, 1001, 10086, 100010000, 1000001,
            20000002, 100000010} <= set(tricky)
    assert [to_chinese_reading(n) for n in tricky] == [cn2an.an2cn(n) for n in tricky]


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
