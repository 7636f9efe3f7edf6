"""decode：贪心与束搜索。束宽 1 等于贪心；束搜索找到的序列得分不低于贪心；结束、填充与长度惩罚。"""
import pytest
import torch

from tfcourse.decode import beam_search, greedy_decode, length_penalty
from tfcourse.model import TINY, Transformer

pytestmark = pytest.mark.numerics   # 与参考实现的数值对照：make numerics 在另一条 CPU 路径上再跑

BOS, EOS, PAD = 1, 2, 0


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Transformer(TINY.replace(src_vocab_size=20, tgt_vocab_size=12)).eval()


@pytest.fixture(scope="module")
def src():
    g = torch.Generator().manual_seed(1)
    s = torch.randint(1, 20, (64, 9), generator=g)
    s[10:, 6:] = PAD
    return s


def _sequence_logprob(model, src, out, alpha):
    """按模型重新打分一条输出（到 EOS 为止），返回归一化后的对数概率。"""
    scores = []
    for i in range(src.shape[0]):
        toks = out[i].tolist()
        if EOS in toks:
            toks = toks[: toks.index(EOS) + 1]
        toks = [t for t in toks if t != PAD]
        tgt = torch.tensor([[BOS] + toks])
        with torch.no_grad():
            logp = model(src[i:i + 1], tgt[:, :-1]).log_softmax(-1)[0]
        total = logp[torch.arange(len(toks)), torch.tensor(toks)].sum()
        scores.append(total / length_penalty(len(toks), alpha))
    return torch.stack(scores)


def test_beam_size_one_equals_greedy(model, src):
    g = greedy_decode(model, src, BOS, EOS, max_len=15)
    b = beam_search(model, src, BOS, EOS, beam_size=1, max_len=15)
    assert torch.equal(g, b)


def test_beam_finds_at_least_as_good_a_score_as_greedy(model, src):
    res = beam_search(model, src, BOS, EOS, beam_size=4, max_len=15, alpha=0.6, return_scores=True)
    greedy = greedy_decode(model, src, BOS, EOS, max_len=15)
    rescored_beam = _sequence_logprob(model, src, res.tokens, 0.6)
    torch.testing.assert_close(rescored_beam, res.scores, atol=1e-4, rtol=1e-4)   # 报出的分数是真分数
    assert torch.all(rescored_beam >= _sequence_logprob(model, src, greedy, 0.6) - 1e-4)


def test_batched_equals_one_by_one(model, src):
    batch = beam_search(model, src[:6], BOS, EOS, beam_size=3, max_len=12)
    for i in range(6):
        one = beam_search(model, src[i:i + 1], BOS, EOS, beam_size=3, max_len=12)
        n = one.shape[1]
        assert torch.equal(batch[i, :n], one[0])
        assert torch.all(batch[i, n:] == PAD)
    g = greedy_decode(model, src[:6], BOS, EOS, max_len=12)
    for i in range(6):
        one = greedy_decode(model, src[i:i + 1], BOS, EOS, max_len=12)
        assert torch.equal(g[i, : one.shape[1]], one[0])


def test_outputs_stop_at_eos_and_pad_afterwards(model, src):
    for out in (greedy_decode(model, src, BOS, EOS, max_len=15), beam_search(model, src, BOS, EOS, max_len=15)):
        for row in out.tolist():
            if EOS in row:
                assert all(t == PAD for t in row[row.index(EOS) + 1:])


def test_a_model_that_learned_to_copy_decodes_what_it_learned():
    """训练 600 步学会复制后，贪心与束搜索都能复制出留出的序列。

    只断言稳健的性质（一大批留出序列上的复制正确率有余量），不断言浮点训练的确切结果：
    不同 CPU 上训练出的权重差在最后几位，个别样本可能不同。"""
    torch.manual_seed(2)
    m = Transformer(TINY)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(3)
    for _ in range(600):
        s = torch.randint(3, 16, (32, 5), generator=g)
        tgt = torch.cat([torch.full((32, 1), BOS), s, torch.full((32, 1), EOS)], 1)
        loss = torch.nn.functional.cross_entropy(m(s, tgt[:, :-1]).reshape(-1, 16), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    s = torch.randint(3, 16, (128, 5), generator=g)
    want = torch.cat([s, torch.full((128, 1), EOS)], 1)
    greedy = greedy_decode(m, s, BOS, EOS, max_len=8)
    beam = beam_search(m, s, BOS, EOS, beam_size=3, max_len=8)
    greedy_rate = (greedy == want).all(dim=1).float().mean().item()
    beam_rate = (beam == want).all(dim=1).float().mean().item()
    assert greedy_rate >= 0.9, greedy_rate                       # 本机 600 步后是 100%：留足余量
    assert beam_rate >= 0.9, beam_rate
    assert m.training                                            # 解码后恢复原来的模式


def test_length_penalty_is_gnmt():
    assert float(length_penalty(1, 0.6)) == pytest.approx(1.0)
    assert float(length_penalty(7, 1.0)) == pytest.approx(2.0)
    assert float(length_penalty(10, 0.0)) == 1.0


@pytest.mark.parametrize(("kwargs", "word"), [
    (dict(beam_size=0), "beam_size"), (dict(alpha=-1.0), "alpha"), (dict(max_len=100), "max_len"),
])
def test_bad_arguments(model, src, kwargs, word):
    with pytest.raises(ValueError, match=word):
        beam_search(model, src, BOS, EOS, **kwargs)
    with pytest.raises(ValueError, match="eos_id"):
        greedy_decode(model, src, BOS, 12)
