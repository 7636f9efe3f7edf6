"""tfcourse.safety：显示给读者的文本里，侮辱性的词被换成 ＊，日常的词不受影响。"""
import pytest

from tfcourse.safety import MASK, find_offensive, is_clean, mask_offensive, offensive_patterns


@pytest.mark.parametrize("text, word", [
    ("服务员对那些小日本却非常热情", "小日本"),
    ("前台服务员好像都是煞笔", "煞笔"),
    ("我他妈的有必要骗你吗", "他妈"),
    ("还我钱来!NND.", "NND"),
    ("这也太sb了", "sb"),
    ("棒子比内地的旅客还吵", "棒子"),
])
def test_slurs_and_insults_are_found_and_masked(text, word):
    assert word in find_offensive(text)
    masked = mask_offensive(text)
    assert len(masked) == len(text) and word not in masked and MASK * len(word) in masked
    assert is_clean(masked)


@pytest.mark.parametrize("text", [
    "买这本书是送老妈的，妈妈的爱",           # "妈的"只在句首算脏话
    "其他妈妈推荐的",                           # "他妈"在"其他妈妈"里不算
    "USB 接口太少，GSB 也不行",                # 拉丁字母里的 SB 不算
    "玉米棒子很好吃，一棒子打死",               # 日常的"棒子"
    "操作系统很垃圾，骗子酒店，靠窗的房间",     # 日常意思占多数的词不收
])
def test_everyday_words_stay(text):
    assert find_offensive(text) == [] and mask_offensive(text) == text


def test_every_pattern_compiles_and_matches_something_nonempty():
    pats = offensive_patterns()
    assert len(pats) >= 30
    assert all(p.search("") is None for p in pats)        # 没有能匹配空串的条目（否则处处命中）


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="字符串"):
        mask_offensive(None)
