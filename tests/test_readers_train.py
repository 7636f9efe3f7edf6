import pytest
import torch

from tfcourse.data.synthetic import first_token_recall
from tfcourse.readers import AttentionReader, RecurrentReader
from tfcourse.train import accuracy, train_classifier


def test_first_token_recall_labels_and_determinism():
    x, y = first_token_recall(64, 7, vocab_size=5, generator=torch.Generator().manual_seed(3))
    assert x.shape == (64, 7) and x.dtype == torch.long
    assert torch.equal(y, x[:, 0]) and int(x.min()) >= 0 and int(x.max()) <= 4
    x2, _ = first_token_recall(64, 7, vocab_size=5, generator=torch.Generator().manual_seed(3))
    assert torch.equal(x, x2)


def test_recurrent_reader_matches_torch_modules():
    torch.manual_seed(0)
    for cell, ref_cls in (("rnn", torch.nn.RNN), ("gru", torch.nn.GRU)):
        m = RecurrentReader(vocab_size=6, n_classes=4, d_model=8, cell=cell).eval()
        assert isinstance(m.cell, ref_cls)
        x = torch.randint(0, 6, (3, 9))
        states, _ = m.cell(m.embed(x))
        torch.testing.assert_close(m(x), m.head(states[:, -1]))


def test_attention_reader_equals_torch_sdpa_and_records_weights():
    torch.manual_seed(0)
    m = AttentionReader(vocab_size=6, n_classes=4, max_len=10, d_model=8).eval()
    x = torch.randint(0, 6, (3, 10))
    logits = m(x)
    e = m.embed(x) + m.pos.weight[:10]
    ctx = torch.nn.functional.scaled_dot_product_attention(m.q_proj(e[:, -1:]), m.k_proj(e), m.v_proj(e))
    torch.testing.assert_close(logits, m.head(ctx[:, 0]))
    assert m.last_weights.shape == (3, 10)
    torch.testing.assert_close(m.last_weights.sum(-1), torch.ones(3))


def test_attention_reader_learns_far_recall_quickly():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    ev = first_token_recall(500, 20, 8, torch.Generator().manual_seed(2))
    m = AttentionReader(8, 8, max_len=20)
    r = train_classifier(m, lambda: first_token_recall(128, 20, 8, g), ev, max_steps=300, eval_every=25,
                         target_accuracy=0.95)
    assert r.solved_at is not None and r.solved_at <= 300 and r.final_accuracy >= 0.95
    assert r.steps_run == r.solved_at                                  # 达到目标就提前停止
    m(ev[0])
    assert m.last_weights[:, 0].mean() > 0.9                           # 学会了只看第 1 个位置


def test_tanh_rnn_does_not_learn_far_recall_in_the_same_budget():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    ev = first_token_recall(500, 20, 8, torch.Generator().manual_seed(2))
    m = RecurrentReader(8, 8, cell="rnn")
    r = train_classifier(m, lambda: first_token_recall(128, 20, 8, g), ev, max_steps=300, eval_every=100,
                         target_accuracy=0.95)
    assert r.solved_at is None and r.final_accuracy < 0.3              # 仍接近瞎猜（1/8）
    assert [s for s, _ in r.history] == [100, 200, 300]


def test_train_classifier_progress_and_callback():
    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    seen = []
    bar = Bar()
    m = RecurrentReader(4, 4, d_model=4)
    ev = first_token_recall(20, 3, 4, torch.Generator().manual_seed(0))
    train_classifier(m, lambda: first_token_recall(8, 3, 4), ev, max_steps=7, eval_every=3,
                     progress=bar, callback=lambda step, model: seen.append(step))
    assert bar.n == 7 and seen == list(range(8))
    assert accuracy(m, *ev) == pytest.approx(accuracy(m, *ev))


def test_readers_reject_bad_input_with_chinese_messages():
    m = AttentionReader(8, 8, max_len=5)
    with pytest.raises(ValueError, match="int64"):
        m(torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"\[0, 7\].*\[0, 9\]"):
        m(torch.tensor([[0, 9, 1, 1, 1]]))
    with pytest.raises(ValueError, match="max_len=5"):
        m(torch.zeros(1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="'rnn' 或 'gru'"):
        RecurrentReader(8, 8, cell="lstm")
    with pytest.raises(ValueError, match="至少为 2"):
        first_token_recall(4, 4, vocab_size=1)
