"""WordPiece 与 transformers.BertTokenizer（以及旧的纯 Python 版）在 MiniLM 的词表上逐 token、逐 id 相同。"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import random

import pytest

from tfcourse.data.reviews import load_reviews
from tfcourse.tokenize import WordPieceTokenizer
from tfcourse.data.minilm import minilm_dir

transformers = pytest.importorskip("transformers")

ENGLISH = [
    "Héllo, wörld! Naïve café — résumé.",
    "The quick (brown) fox's jump: 3.14 $ ^ ` ~ costs 100%.",
    "a" * 99, "b" * 100, "c" * 101,                                   # 100 个字符是上限
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Ünïcödé ÀÉÎÕÜ straße ǅ ﬁ İstanbul",
    "tab\tnew\nline\r\x00ctrl\u200bzero\u00a0nbsp\u3000ideo\ufffdrepl",
    "日本語のテキスト 한국어 텍스트 中文，标点。“引号”",
    "emoji 😀👍🏽 and ®©™ … «guillemets» ¿qué?",
    "", "   ", "[CLS] [MASK] are special", "Paris is the [MASK] of France.", "x[MASK]y [mask] [ MASK ] [SEP][PAD]",
]


@pytest.fixture(scope="module")
def tokenizers():
    d = minilm_dir()
    ours = WordPieceTokenizer.from_file(d / "vocab.txt")
    ref = transformers.BertTokenizer.from_pretrained(str(d))
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
    legacy = BertTokenizerLegacy(str(d / "vocab.txt"), do_lower_case=True)
    return ours, ref, legacy


def _random_texts(n, seed=0):
    rng = random.Random(seed)
    pools = ["abcXYZ éüñç", "，。！？、“”", "的了是我你好注意力", " \t\n", "0123456789", "!@#$%^&*()_+-=[]{};':\",./<>?`~",
             "ÀÉÎÕÜàéîõüÅåØø", "ﬁﬂ", "\u0301\u0308", "😀🎉", "ΑΒΓαβγ АБВабв"]
    return ["".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def test_matches_bert_tokenizer_on_every_review(tokenizers):
    ours, ref, _ = tokenizers
    texts = load_reviews().texts
    mismatched = [t for t in texts if ours.encode(t) != ref(t)["input_ids"]]
    assert not mismatched, mismatched[:3]


def test_matches_on_english_edge_cases_and_random_text(tokenizers):
    ours, ref, legacy = tokenizers
    for text in ENGLISH + _random_texts(500):
        want = ref(text)["input_ids"]
        assert ours.encode(text) == want, repr(text)
        assert ours.tokenize(text) == ref.convert_ids_to_tokens(want)[1:-1], repr(text)
    for text in ENGLISH[:8] + _random_texts(100, seed=1):             # 旧的纯 Python 版慢，抽一部分
        assert ours.encode(text) == legacy(text)["input_ids"], repr(text)


def test_long_words_and_unknowns(tokenizers):
    ours, *_ = tokenizers
    assert ours.tokenize("b" * 100) != ["[UNK]"] and ours.tokenize("c" * 101) == ["[UNK]"]
    assert ours.encode("注意力", add_special_tokens=False).count(ours.unk_id) >= 1   # 英文词表：汉字多半不认识
    assert ours.decode(ours.encode("Hello, world!")) == "hello , world !"


def test_english_vocabulary_cannot_read_chinese(tokenizers):
    ours, *_ = tokenizers
    ids = [i for t in load_reviews().texts[:2000] for i in ours.encode(t, add_special_tokens=False)]
    assert 0.5 < ids.count(ours.unk_id) / len(ids) < 0.8


def test_bad_input(tokenizers, tmp_path):
    ours, *_ = tokenizers
    with pytest.raises(ValueError, match="字符串"):
        ours.tokenize(["不是字符串"])
    with pytest.raises(ValueError, match="id 应为"):
        ours.decode([ours.vocab_size])
    with pytest.raises(ValueError, match="找不到词表"):
        WordPieceTokenizer.from_file(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="特殊 token"):
        WordPieceTokenizer({"a": 0})
