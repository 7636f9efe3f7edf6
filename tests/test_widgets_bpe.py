"""BPE 合并探索器：每一步的切分 = 用前 k 次合并编码的结果；滑块夹回范围；初始视图；状态紧凑。"""
import json

import pytest

from tfcourse.tokenize import BPETokenizer
from tfcourse.widgets import BPEMergeExplorer
from tfcourse.widgets.bpe_explorer import token_label

CORPUS = ["这本书很好，很好看。", "这本书不好看，不好。", "书很好，好看！"] * 4 + ["hello world, hello!"]
SENTENCE = "这本书很好看，hello！"


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(CORPUS, 320)


def test_every_step_equals_encoding_with_the_first_k_merges(tok):
    w = BPEMergeExplorer(tok, SENTENCE)
    assert w.n_steps == len(tok.merges) > 10
    for k in range(w.n_steps + 1):
        assert w.token_ids(k) == BPETokenizer(tok.merges[:k]).encode(SENTENCE), k
    assert w.token_ids(0) == list(SENTENCE.encode("utf-8"))
    assert len(w.change_steps) < w.n_steps + 1                 # 只记录变化的步
    assert w.change_steps == sorted(set(w.change_steps))


def test_initial_view_and_clamping(tok):
    w = BPEMergeExplorer(tok, SENTENCE, n_steps=30)
    assert w.step == 0 and len(w.tokens()) == len(SENTENCE.encode("utf-8"))
    w.set(1000)
    assert w.step == 30
    w.step = -5
    assert w.step == 0
    w2 = BPEMergeExplorer(tok, SENTENCE, step=12)
    assert w2.step == 12 and w2.tokens() == [token_label(tok.token_bytes(i)) for i in w2.token_ids()]
    assert len(w.merges) == 30


def test_merges_describe_the_new_token(tok):
    w = BPEMergeExplorer(tok, SENTENCE)
    for k, (a, b) in enumerate(tok.merges):
        assert w.merges[k][2] == token_label(tok.token_bytes(a) + tok.token_bytes(b))


def test_token_labels():
    assert token_label("好".encode()) == "好"
    assert token_label("好".encode()[:2]) == "⟨e5 a5⟩"
    assert token_label(b" a\n") == "␣a⏎"
    assert token_label(b"\xe5x") == "⟨e5⟩x"


def test_bad_arguments(tok):
    with pytest.raises(ValueError, match="BPETokenizer"):
        BPEMergeExplorer(object(), SENTENCE)
    with pytest.raises(ValueError, match="非空字符串"):
        BPEMergeExplorer(tok, "")
    with pytest.raises(ValueError, match="n_steps 应为 0 …"):
        BPEMergeExplorer(tok, SENTENCE, n_steps=10_000)
    with pytest.raises(ValueError, match="step 应为整数"):
        BPEMergeExplorer(tok, SENTENCE).set(1.5)


def test_state_is_json_and_compact(tok):
    w = BPEMergeExplorer(tok, SENTENCE)
    state = json.dumps(w.get_state())
    assert len(state) < 100_000
    assert "model.get" in w._esm and "save_changes" in w._esm


def test_token_labels_group_consecutive_partial_bytes():
    assert token_label("好".encode()[1:]) == "⟨a5 bd⟩"
    assert token_label(b"\xa5\xbd" + "好".encode() + b"\xe5") == "⟨a5 bd⟩好⟨e5⟩"
    assert token_label(b"") == ""
