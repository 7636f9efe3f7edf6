"""字节级 BPE（tfcourse.tokenize.bpe）：往返编码、增量训练 = 朴素训练、与 `tokenizers` 逐 id 对照、
与 `tokenizers` 的 BpeTrainer 对照训练结果、确定性、错误输入。"""
import json
import random

import pytest
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from tfcourse.data.reviews import split_reviews
from tfcourse.tokenize import BPETokenizer
from tfcourse.tokenize.bpe import CHUNK_PATTERN, split_chunks


# ---------------------------------------------------------------- 公共数据

@pytest.fixture(scope="module")
def reviews():
    return split_reviews(0)


@pytest.fixture(scope="module")
def trained(reviews):
    return BPETokenizer.train(reviews.train.texts[:1500], 800)


def _random_string(rng: random.Random, n: int) -> str:
    """各种字符混在一起：ASCII、汉字、扩展区汉字、emoji（含肤色修饰、ZWJ 序列）、组合附加符号、
    全角标点、空白与控制字符、落单的代理项、任意码位。"""
    pools = [
        lambda: chr(rng.randrange(32, 127)),
        lambda: chr(rng.randrange(0x4E00, 0x9FFF)),
        lambda: chr(rng.randrange(0x20000, 0x2A6DF)),
        lambda: rng.choice(["😀", "👍🏽", "👨‍👩‍👧", "🇨🇳", "❤️"]),
        lambda: chr(rng.randrange(0x0300, 0x036F)),
        lambda: rng.choice("，。！？、；：“”（）《》…—"),
        lambda: rng.choice(" \t\n\r\x0b\x0c\u3000\xa0\x00"),
        lambda: chr(rng.randrange(0xD800, 0xE000)),
        lambda: chr(rng.randrange(0, 0x110000)),
    ]
    return "".join(rng.choice(pools)() for _ in range(n))


# ---------------------------------------------------------------- 往返与基本性质

def test_round_trip_on_random_strings(trained):
    rng = random.Random(11)
    for k in range(400):
        s = _random_string(rng, rng.randrange(0, 40))
        ids = trained.encode(s)
        assert trained.decode(ids, errors="strict") == s, repr(s)
        assert all(0 <= i < trained.vocab_size for i in ids)


def test_round_trip_of_a_tokenizer_trained_on_strange_text():
    rng = random.Random(5)
    corpus = [_random_string(rng, 30) for _ in range(60)] + ["😀😀😀 é́ 한국어 ok"] * 5
    tok = BPETokenizer.train(corpus, 400, min_frequency=1)
    assert tok.vocab_size > 256
    for s in corpus + [_random_string(rng, 50) for _ in range(100)]:
        assert tok.decode(tok.encode(s)) == s


def test_chunks_cover_the_text_and_keep_chinese_runs_whole():
    rng = random.Random(2)
    for _ in range(200):
        s = _random_string(rng, 30)
        assert "".join(split_chunks(s)) == s
    chunks = split_chunks("这本书很好，iPhone 用了3年!")
    assert chunks == ["这本书很好", "，", "iPhone", " ", "用了", "3", "年", "!"]


def test_merge_ids_and_token_bytes(trained):
    assert trained.vocab_size == 256 + len(trained.merges) == 800
    for i, (a, b) in enumerate(trained.merges):
        assert a < 256 + i and b < 256 + i                     # 只能合并已有的 token
        assert trained.token_bytes(256 + i) == trained.token_bytes(a) + trained.token_bytes(b)
    assert trained.token_bytes(65) == b"A"
    assert len(set(trained.merges)) == len(trained.merges)


def test_encoding_compresses_chinese(trained, reviews):
    texts = reviews.test.texts[:300]
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    n_tokens = sum(len(trained.encode(t)) for t in texts)
    assert n_bytes / n_tokens > 2.0                            # 只用字节时是 1.0


# ---------------------------------------------------------------- 训练：增量 = 朴素，确定性

def test_incremental_training_equals_naive_training(reviews):
    corpus = reviews.train.texts[:300]
    fast = BPETokenizer.train(corpus, 356)
    slow = BPETokenizer.train_naive(corpus, 356)
    assert fast.merges == slow.merges and len(fast.merges) == 100


@pytest.mark.parametrize("corpus", [
    ["aaaa abab ababab aaa", "aaa aa a"],                   # 重叠的对：a a a
    ["的的的的的 的的", "哈哈哈哈 哈哈哈", "abcabcabc"],
])
def test_incremental_equals_naive_on_overlapping_pairs(corpus):
    fast = BPETokenizer.train(corpus, 300, min_frequency=1)
    slow = BPETokenizer.train_naive(corpus, 300, min_frequency=1)
    assert fast.merges == slow.merges
    assert len(fast.merges) > 5


def test_training_is_deterministic_and_ignores_corpus_order(reviews):
    corpus = list(reviews.train.texts[:400])
    a = BPETokenizer.train(corpus, 500)
    shuffled = corpus[:]
    random.Random(3).shuffle(shuffled)
    b = BPETokenizer.train(shuffled, 500)
    assert a.merges == b.merges


def test_tie_break_takes_the_smallest_pair():
    # "ab" 与 "cd" 各出现 3 次：平局，取编号对较小的 (97, 98)
    tok = BPETokenizer.train(["cd,ab,cd,ab,cd,ab"], 257, min_frequency=1)
    assert tok.merges == [(97, 98)]
    tok = BPETokenizer.train(["cd,ab,cd,ab,cd,ab,cd"], 257, min_frequency=1)
    assert tok.merges == [(99, 100)]                          # cd 多一次：次数优先


def test_prefix_of_the_merges_is_the_smaller_vocabulary(reviews):
    corpus = reviews.train.texts[:300]
    big = BPETokenizer.train(corpus, 400)
    small = BPETokenizer.train(corpus, 330)
    assert big.merges[:74] == small.merges


def test_training_stops_when_pairs_are_too_rare():
    tok = BPETokenizer.train(["ab"], 1000)                   # "ab" 只出现一次 < min_frequency = 2
    assert tok.vocab_size == 256


def test_save_and_load(tmp_path, trained):
    path = tmp_path / "bpe.json"
    trained.save(path)
    again = BPETokenizer.load(path)
    assert again == trained and again.encode("好评！") == trained.encode("好评！")


# ---------------------------------------------------------------- 对照 tokenizers

def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2 的字节 → 可见字符映射（tokenizers 的 ByteLevel 用同一张表）。"""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = _bytes_to_unicode()
U2B = {c: b for b, c in B2U.items()}


def _pre_tokenizer():
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CHUNK_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def _hf_from_merges(tok: BPETokenizer) -> Tokenizer:
    def s(i):
        return "".join(B2U[b] for b in tok.token_bytes(i))
    vocab = {s(i): i for i in range(tok.vocab_size)}
    hf = Tokenizer(models.BPE(vocab, [(s(a), s(b)) for a, b in tok.merges]))
    hf.pre_tokenizer = _pre_tokenizer()
    hf.decoder = decoders.ByteLevel()
    return hf


def test_alphabet_matches_tokenizers_byte_level():
    assert set(B2U.values()) == set(pre_tokenizers.ByteLevel.alphabet())


def test_encoding_equals_tokenizers_bpe_with_the_same_merges(trained, reviews):
    hf = _hf_from_merges(trained)
    texts = list(reviews.test.texts[:1000]) + [
        "iPhone很好 用了3年! ok\u0301  \n x_y", "😀👍🏽 𠀀𠀁 ①② ３０％", "  多个  空格\t\t\n\n"]
    for t in texts:
        ids = trained.encode(t)
        assert hf.encode(t).ids == ids, t
        assert hf.decode(ids) == t


def test_training_agrees_with_tokenizers_bpe_trainer(trained, reviews):
    corpus = reviews.train.texts[:1500]
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = _pre_tokenizer()
    trainer = trainers.BpeTrainer(vocab_size=800, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    hf.train_from_iterator(corpus, trainer)
    theirs = {bytes(U2B[c] for c in t) for t in hf.get_vocab()}
    ours = {trained.token_bytes(i) for i in range(trained.vocab_size)}
    assert len(theirs) == len(ours) == 800
    assert len(theirs & ours) / 800 > 0.97                     # 只在平局的先后上可能不同
    merges = json.loads(hf.to_str())["model"]["merges"]
    assert len(merges) == len(trained.merges)
    texts = reviews.test.texts[:300]
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    ours_bpt = n_bytes / sum(len(trained.encode(t)) for t in texts)
    theirs_bpt = n_bytes / sum(len(hf.encode(t).ids) for t in texts)
    assert abs(ours_bpt - theirs_bpt) / theirs_bpt < 0.02


# ---------------------------------------------------------------- 错误输入

def test_bad_input_gives_chinese_errors(trained):
    with pytest.raises(ValueError, match="vocab_size 应 ≥ 256.*255"):
        BPETokenizer.train(["abc"], 255)
    with pytest.raises(ValueError, match="vocab_size 应为整数"):
        BPETokenizer.train(["abc"], 300.0)
    with pytest.raises(ValueError, match="字符串的列表"):
        BPETokenizer.train("abc", 300)
    with pytest.raises(ValueError, match=r"texts\[1\] 应为字符串.*int"):
        BPETokenizer.train(["abc", 3], 300)
    with pytest.raises(ValueError, match="text 应为字符串.*bytes"):
        trained.encode(b"abc")
    with pytest.raises(ValueError, match=r"ids\[1\] 应在 0 … 799 之内.*800"):
        trained.decode([1, 800])
    with pytest.raises(ValueError, match=r"ids\[0\] 应在 0 … 799 之内.*-1"):
        trained.decode([-1])
    with pytest.raises(ValueError, match="整数编号"):
        trained.decode([1.5])
    with pytest.raises(ValueError, match="token_id 应在"):
        trained.token_bytes(10_000)
    with pytest.raises(ValueError, match="ids 应为整数编号的列表"):
        trained.decode("abc")


def test_decoding_an_invalid_byte_sequence():
    tok = BPETokenizer()
    assert tok.decode([0xE4, 0xB8]) == "\ufffd"               # 半个汉字：默认换成 U+FFFD
    with pytest.raises(ValueError, match="不是合法的 UTF-8"):
        tok.decode([0xE4, 0xB8], errors="strict")


def test_bad_merges_and_bad_files(tmp_path):
    with pytest.raises(ValueError, match=r"merges\[0\]"):
        BPETokenizer([(1, 256)])
    path = tmp_path / "x.json"
    path.write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(ValueError, match="tfcourse-bpe"):
        BPETokenizer.load(path)


def test_token_counts_equal_encoding_with_each_prefix(trained, reviews):
    texts = reviews.test.texts[:100]
    counts = trained.token_counts(texts)
    assert len(counts) == len(trained.merges) + 1
    assert counts[0] == sum(len(t.encode("utf-8")) for t in texts)
    assert all(a >= b for a, b in zip(counts, counts[1:]))
    for k in (0, 1, 50, 300, len(trained.merges)):
        assert counts[k] == sum(len(BPETokenizer(trained.merges[:k]).encode(t)) for t in texts), k
