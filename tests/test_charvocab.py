"""tfcourse.tokenize.CharVocab：字级分词，编码/解码、频率排序、meta 往返与错误信息。"""
import pytest

from tfcourse.tokenize import CharVocab


def test_build_orders_by_frequency_then_first_occurrence():
    v = CharVocab.build(["好好好差", "差不好", "一"], size=3)
    assert v.itos == ["[PAD]", "[UNK]", "好", "差", "不"]          # 好 4 次、差 2 次；不 与 一 各 1 次，不 先出现
    assert v.encode("好一差") == [2, 1, 3]
    assert v.decode(v.encode("不好")) == "不好" and v.decode([0, 2, 0]) == "好"
    assert v.encode("好好好", max_len=2) == [2, 2]


def test_meta_roundtrip_and_specials():
    v = CharVocab.build(["甲乙丙", "[MASK]"], size=10, specials=("[PAD]", "[UNK]", "[CLS]"))
    w = CharVocab.from_meta(v.to_meta())
    assert w.itos == v.itos and w.id("[CLS]") == 2 and len(w) == len(v)


def test_bad_input_messages_are_chinese():
    v = CharVocab.build(["甲乙"], size=2)
    with pytest.raises(ValueError, match="字符串"):
        v.encode(3)
    with pytest.raises(ValueError, match="id 应在"):
        v.decode([99])
    with pytest.raises(ValueError, match="正整数"):
        CharVocab.build(["甲"], size=0)
    with pytest.raises(ValueError, match="不在字表"):
        v.id("丁")
    with pytest.raises(ValueError, match="特殊 token"):
        CharVocab(["甲", "乙"])
