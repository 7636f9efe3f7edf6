"""检查点 gpt-zh：重新载入后仍达到记录的困惑度，并且低于同一字表上的二元基线；字表与控制 token 的约定。"""
import math

import pytest
import torch

from tfcourse.data.reviews import split_reviews
from tfcourse.gpt import GPT, encode_reviews, load_gpt_zh, mean_nll


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """小模型：1 个线程更快，也不随核数变。"""


@pytest.fixture(scope="module")
def gpt_zh():
    return load_gpt_zh()


def test_reloaded_model_reaches_its_recorded_test_perplexity(gpt_zh):
    model, vocab = gpt_zh
    test = encode_reviews(vocab, split_reviews(0).test.texts)
    nll = mean_nll(model, test, block=64)
    assert abs(nll - model.meta["test_nll"]) < 0.005            # 别的 CPU：只差舍入
    bigram = model.meta["baselines"]["bigram_test_ppl"]
    assert math.exp(nll) < 0.9 * bigram                        # 比二元基线低 10% 以上
    assert model.meta["val_ppl"] < 0.9 * model.meta["baselines"]["bigram_val_ppl"]


def test_vocabulary_and_control_tokens(gpt_zh):
    model, vocab = gpt_zh
    assert isinstance(model, GPT) and not model.training
    assert vocab.itos[:4] == ["⏎", "□", "<好评>", "<差评>"] and len(vocab) == model.config.vocab_size == 4004
    assert model.lm_head.weight is model.tok_emb.weight          # 共享权重载入后仍是同一个张量
    assert vocab.pad_id == 0 and vocab.unk_id == 1


def test_encode_reviews_puts_a_separator_before_each_review(gpt_zh):
    _, vocab = gpt_zh
    ids = encode_reviews(vocab, ["好", "很差"])
    assert ids.tolist() == [0, vocab.id("好"), 0, vocab.id("很"), vocab.id("差")]
    assert ids.dtype == torch.long
    with pytest.raises(ValueError, match="列表"):
        encode_reviews(vocab, "好")


def test_vocabulary_covers_held_out_reviews(gpt_zh):
    """字表盖住留出评论里至少 99.5% 的字（1000 个字的旧字表只盖住约 94%，样本里到处是 □）。"""
    _, vocab = gpt_zh
    s = split_reviews(0)
    for part in (s.val, s.test):
        ids = encode_reviews(vocab, part.texts)
        chars = ids[ids != 0]                                     # 去掉分隔符
        assert (chars != vocab.unk_id).float().mean() > 0.995
    assert vocab.encode("好\U0001F600") == [vocab.id("好"), vocab.unk_id]   # 没见过的字记作 □


def test_samples_contain_no_unknown_mark(gpt_zh):
    """第 13、15 章的抽样设置（温度 1、top-p 0.9）写出的评论里没有 □，也没有控制 token。"""
    from tfcourse import control

    model, vocab = gpt_zh
    texts = control.generate_reviews(model, vocab, None, 32, max_new_tokens=46, seed=0)
    assert sum(len(t) for t in texts) > 32 * 10
    assert not any(ch in t for t in texts for ch in ("□", "<好评>", "<差评>"))
