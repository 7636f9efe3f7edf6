"""第 15 章的样本看板（SampleBoard）：Python 端的校验、成功率、夹住序号、遮住侮辱性的词并打开在干净的一条。浏览器里的显示见 tests/browser/test_widget_views.py。"""
import numpy as np
import pytest

from tfcourse.widgets import SampleBoard


def _board(**kw):
    texts = [[["a1", "a2", "a3"], ["b1", "b2", "b3"]], [["c1", "c2", "c3"], ["d1", "d2", "d3"]]]
    probs = np.array([[[[0.9, 0.2, 0.6], [0.1, 0.7, 0.4]], [[0.5, 0.49, 0.0], [1.0, 0.3, 0.2]]]])   # (J=1, M=2, C=2, n=3)
    return SampleBoard(texts, probs, models=["甲", "乙"], judges=["评委"], **kw)


def test_success_rates_and_verdicts():
    b = _board()
    assert b.verdicts[0][0] == [[1], [0], [1]]                      # P ≥ 0.5 判为好评
    assert b.success[0][0][0] == pytest.approx(2 / 3, abs=1e-4)              # 要求好评：0.9、0.6 成功
    assert b.success[0][1][0] == pytest.approx(2 / 3, abs=1e-4)              # 要求差评：0.1、0.4 成功
    assert b.success[1][0][0] == pytest.approx(1 / 3, abs=1e-4)              # 0.5 算好评，0.49 不算
    cell = b.readout()["cells"]["乙", "差评"]
    assert cell == {"text": "d1", "probs": [1.0], "verdicts": [1], "hit": [False]}


def test_index_is_clamped():
    b = _board(index=7)
    assert b.index == 2 and b.set(index=-3).index == 0 and b.readout()["index"] == 0


@pytest.mark.parametrize("bad", [
    dict(samples=[[["a"], ["b"]]], probs=np.zeros((1, 2, 2, 1))),              # 模型数不对
    dict(samples=[[["a"], ["b", "c"]]] * 2, probs=np.zeros((1, 2, 2, 1))),     # 每格条数不同
    dict(samples=[[["a"], ["b"]]] * 2, probs=np.full((1, 2, 2, 1), 1.5)),     # 概率超出 0～1
    dict(samples=[[["a"], ["b"]]] * 2, probs=np.zeros((2, 2, 2, 1))),          # 评委数不对
])
def test_bad_input_raises_a_chinese_error(bad):
    with pytest.raises(ValueError, match="应"):
        SampleBoard(bad["samples"], bad["probs"], models=["甲", "乙"], judges=["评委"])


def test_offensive_words_are_masked_for_display_and_the_board_opens_on_a_clean_row():
    # 第 0 条里有一个歧视性的称呼：看板存下的是遮住的文本，成功率仍按传进来的 P(好评)（在原文上算的）
    texts = [[["小日本的酒店", "a2", "a3"], ["b1", "b2", "b3"]], [["c1", "这也太sb了", "c3"], ["d1", "d2", "d3"]]]
    probs = np.array([[[[0.9, 0.2, 0.6], [0.1, 0.7, 0.4]], [[0.5, 0.49, 0.0], [1.0, 0.3, 0.2]]]])
    b = SampleBoard(texts, probs, models=["甲", "乙"], judges=["评委"])
    assert b.texts[0][0][0] == "＊＊＊的酒店" and b.texts[1][0][1] == "这也太＊＊了"
    assert SampleBoard.first_clean_index(texts) == 2 and b.index == 2       # 第 0、1 条都有要遮的词
    assert b.success[0][0][0] == pytest.approx(2 / 3, abs=1e-4)              # 遮挡不改判决
    assert SampleBoard(texts, probs, models=["甲", "乙"], judges=["评委"], index=0).index == 0   # 指定了就照办
    dirty = [[[t + "sb" for t in cell] for cell in row] for row in texts]
    assert SampleBoard.first_clean_index(dirty) is None
    assert SampleBoard(dirty, probs, models=["甲", "乙"], judges=["评委"]).index == 0
