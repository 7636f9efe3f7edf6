"""tfcourse.bert：MiniLM 逐层等于 transformers、句向量等于 sentence-transformers、80/10/10 掩码规则、MLM 损失不数填充。"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"          # 参考库只读本地文件，绝不联网

import pytest  # noqa: E402
import torch  # noqa: E402

from tfcourse.bert import (IGNORE_INDEX, MINILM, TINY, BertConfig, BertForMaskedLM, BertModel,  # noqa: E402
                           load_minilm, mask_tokens, mlm_loss, sentence_embedding)
from tfcourse.model import count_parameters  # noqa: E402

pytestmark = pytest.mark.numerics   # 与参考实现的数值对照：make numerics 在另一条 CPU 路径上再跑

SENTENCES = [
    "The cat sat on the mat.",
    "A man is playing a guitar on stage, and the crowd sings along!",
    "Hi",
    "Résumé naïve café — unbelievably over-engineered tokenization.",
    "What is the capital of France?",
]


@pytest.fixture(scope="module")
def minilm():
    """本课程装好的 MiniLM、它的分词器，以及 sentence-transformers 的参考（里面就是 transformers 的 BertModel）。"""
    from sentence_transformers import SentenceTransformer

    from tfcourse.data.minilm import minilm_dir

    model, tokenizer = load_minilm()
    st = SentenceTransformer(str(minilm_dir()), device="cpu")
    return model, tokenizer, st


def test_minilm_equals_transformers_at_every_layer(minilm):
    import transformers

    model, tokenizer, st = minilm
    hf = st[0].auto_model.eval()
    assert isinstance(hf, transformers.BertModel)
    enc = st.tokenizer(SENTENCES, padding=True, return_tensors="pt")
    # 同一批、带填充；本课程的分词器给出同样的 id
    assert [tokenizer.encode(s) for s in SENTENCES[:3]] == [
        ids[m.bool()].tolist() for ids, m in zip(enc["input_ids"][:3], enc["attention_mask"][:3])]
    real = enc["attention_mask"].bool()
    assert (~real).any()                                   # 这一批里确实有填充
    with torch.no_grad():
        ours = model.hidden_states(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
        theirs = hf(**enc, output_hidden_states=True).hidden_states
    assert len(ours) == len(theirs) == MINILM.n_layers + 1
    for layer, (a, b) in enumerate(zip(ours, theirs)):
        diff = (a - b)[real].abs().max().item()
        assert diff <= 1e-5, f"第 {layer} 层的隐藏状态相差 {diff:.2e}"


def test_minilm_attention_weights(minilm):
    model, tokenizer, st = minilm
    enc = st.tokenizer(SENTENCES[:2], padding=True, return_tensors="pt")
    with torch.no_grad():
        model(enc["input_ids"], attention_mask=enc["attention_mask"])
    w = model.attention_weights()
    B, T = enc["input_ids"].shape
    assert w.shape == (MINILM.n_layers, B, MINILM.n_heads, T, T)
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    pad_keys = ~enc["attention_mask"].bool()                # (B, T)
    assert pad_keys.any()
    assert w[pad_keys[None, :, None, None, :].expand_as(w)].abs().max().item() == 0.0   # 填充位置没人看


def test_sentence_embedding_equals_sentence_transformers(minilm):
    model, tokenizer, st = minilm
    texts = SENTENCES + ["word " * 400]                     # 最后一句超过 256 个 token：两边都截断
    ours = sentence_embedding(model, tokenizer, texts, batch_size=4)
    theirs = torch.as_tensor(st.encode(texts, batch_size=4, convert_to_numpy=True))
    assert ours.shape == (len(texts), MINILM.d_model)
    torch.testing.assert_close(ours.norm(dim=1), torch.ones(len(texts)))
    assert (ours - theirs).abs().max().item() <= 1e-5
    # 按意思排：猫那句与一句改写的相似度高于与吉他那句
    e = sentence_embedding(model, tokenizer, ["A cat is sitting on a rug.", SENTENCES[0], SENTENCES[1]])
    assert float(e[0] @ e[1]) > float(e[0] @ e[2]) + 0.2


def test_minilm_parameter_count(minilm):
    model, _, _ = minilm
    assert count_parameters(model) == count_parameters(BertModel(MINILM))
    assert 22_000_000 < count_parameters(model) < 23_000_000   # 22.6M；HF 的 pooler 不装


# --------------------------------------------------------------------------- 掩码

V, MASK, PAD, CLS, SEP = 1000, 4, 0, 2, 3
SPECIAL = (0, 1, 2, 3, 4)


def _batch(B=1000, T=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    ids[:, 0] = CLS
    ids[torch.arange(B), lengths - 1] = SEP
    ids[torch.arange(T)[None, :] >= lengths[:, None]] = PAD
    return ids


def test_mask_tokens_follows_15_80_10_10():
    ids = _batch()
    inputs, labels = mask_tokens(ids, vocab_size=V, mask_id=MASK, special_ids=SPECIAL,
                                 generator=torch.Generator().manual_seed(1))
    normal = ids >= 5
    chosen = labels != IGNORE_INDEX
    n = int(normal.sum())
    assert n > 100_000
    frac = chosen.sum().item() / n
    assert abs(frac - 0.15) < 0.005                         # 标准差约 0.0008
    assert not chosen[~normal].any()                        # 特殊 token、填充从不被选
    assert torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(inputs[~chosen], ids[~chosen])       # 没选中的位置原样不动
    k = chosen.sum().item()
    masked = (inputs[chosen] == MASK).sum().item() / k
    kept = (inputs[chosen] == ids[chosen]).sum().item() / k
    random = 1 - masked - kept
    assert abs(masked - 0.8) < 0.015 and abs(kept - 0.1) < 0.01 and abs(random - 0.1) < 0.01
    assert (inputs[chosen & (inputs != MASK)] >= 5).all()    # 随机替换只用普通 token


def test_mask_tokens_is_seeded_and_p_one_chooses_all_normal():
    ids = _batch(20, 30)
    a = mask_tokens(ids, vocab_size=V, mask_id=MASK, special_ids=SPECIAL, generator=torch.Generator().manual_seed(5))
    b = mask_tokens(ids, vocab_size=V, mask_id=MASK, special_ids=SPECIAL, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    _, labels = mask_tokens(ids, vocab_size=V, mask_id=MASK, special_ids=SPECIAL, p=1.0)
    assert torch.equal(labels != IGNORE_INDEX, ids >= 5)


@pytest.mark.parametrize("kwargs, words", [
    (dict(p=0.0), "p"), (dict(p=1.5), "p"), (dict(p=-0.1), "p"),
    (dict(mask_id=V), "mask_id"), (dict(vocab_size=10), "0 到 9"), (dict(special_ids=[V + 3]), "special_ids"),
])
def test_mask_tokens_bad_input(kwargs, words):
    args = dict(vocab_size=V, mask_id=MASK, special_ids=SPECIAL) | kwargs
    with pytest.raises(ValueError, match=words):
        mask_tokens(_batch(2, 10), **args)


def test_mask_tokens_rejects_non_tensor_and_float_ids():
    with pytest.raises(ValueError, match="整数张量"):
        mask_tokens([[5, 6]], vocab_size=V, mask_id=MASK, special_ids=SPECIAL)
    with pytest.raises(ValueError, match="整数张量"):
        mask_tokens(torch.rand(2, 3), vocab_size=V, mask_id=MASK, special_ids=SPECIAL)


# --------------------------------------------------------------------------- 小模型

def test_padding_does_not_change_real_tokens_or_the_mlm_loss(one_thread):
    torch.manual_seed(0)
    model = BertForMaskedLM(TINY).eval()
    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(5, TINY.vocab_size, (n,), generator=g) for n in (7, 12, 4)]
    masked = [mask_tokens(s[None], vocab_size=TINY.vocab_size, mask_id=MASK, special_ids=SPECIAL, p=0.5,
                          generator=g) for s in seqs]
    T = max(len(s) for s in seqs)
    inputs = torch.full((3, T), TINY.pad_id)
    labels = torch.full((3, T), IGNORE_INDEX)
    for i, (x, y) in enumerate(masked):
        inputs[i, :x.shape[1]], labels[i, :y.shape[1]] = x[0], y[0]
    with torch.no_grad():
        padded = mlm_loss(model(inputs), labels)
        logits = [model(x) for x, _ in masked]
    flat_logits = torch.cat([lg[0] for lg in logits])
    flat_labels = torch.cat([y[0] for _, y in masked])
    unpadded = torch.nn.functional.cross_entropy(flat_logits[flat_labels != -100], flat_labels[flat_labels != -100])
    assert abs(padded.item() - unpadded.item()) < 1e-5
    # 填充位置若也算进损失（常见的错误：填充处的标签写成了 [PAD] 而不是 −100），数字就不一样了
    with torch.no_grad():
        wrong = mlm_loss(model(inputs), torch.where(inputs == TINY.pad_id, inputs, labels))
    assert abs(wrong.item() - unpadded.item()) > 1e-3


def test_tiny_bert_overfits_one_batch(one_thread):
    torch.manual_seed(0)
    model = BertForMaskedLM(TINY)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, TINY.vocab_size, (8, 16), generator=g)
    inputs, labels = mask_tokens(ids, vocab_size=TINY.vocab_size, mask_id=MASK, special_ids=SPECIAL, p=0.3,
                                 generator=g)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = None
    for _ in range(150):
        loss = mlm_loss(model(inputs), labels)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first > 2.5 and loss.item() < 0.1


def test_mlm_head_is_tied_and_shapes():
    model = BertForMaskedLM(TINY)
    assert model.decoder.weight is model.bert.tok_emb.weight
    logits = model(torch.tensor([[2, 7, 8, 3, 0, 0]]))
    assert logits.shape == (1, 6, TINY.vocab_size)


def test_attention_mask_defaults_to_pad_id():
    torch.manual_seed(0)
    model = BertModel(TINY).eval()
    ids = torch.tensor([[2, 7, 8, 3, 0, 0]])
    with torch.no_grad():
        a = model(ids)
        b = model(ids, attention_mask=ids != 0)
        c = model(ids[:, :4])
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a[:, :4], c, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- 错误输入

def test_config_validation():
    with pytest.raises(ValueError, match="整除"):
        BertConfig(vocab_size=10, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="pad_id"):
        BertConfig(vocab_size=10, d_model=32, n_heads=4, pad_id=10)
    with pytest.raises(ValueError, match="dropout"):
        TINY.replace(dropout=1.0)
    with pytest.raises(ValueError, match="vocab_size"):
        BertConfig(vocab_size=0)


@pytest.mark.parametrize("call, words", [
    (lambda m: m(torch.tensor([[1, 2, TINY.vocab_size]])), "0 到 31"),
    (lambda m: m(torch.tensor([[1, 2, -1]])), "0 到 31"),
    (lambda m: m(torch.tensor([1, 2, 3])), r"\(B, T\)"),
    (lambda m: m(torch.tensor([[1, 2, 3]]), attention_mask=torch.ones(1, 4)), "attention_mask 的形状"),
    (lambda m: m(torch.tensor([[1, 2, 3]]), attention_mask=torch.tensor([[0, 0, 0]])), "全是填充"),
    (lambda m: m(torch.tensor([[1, 2, 3]]), token_type_ids=torch.tensor([[0, 2, 0]])), "token_type_ids"),
    (lambda m: m(torch.tensor([[1, 2, 3]]), token_type_ids=torch.tensor([[0, 1]])), "token_type_ids 的形状"),
    (lambda m: m(torch.ones(1, TINY.max_len + 1, dtype=torch.long)), "max_len"),
    (lambda m: BertModel(TINY).attention_weights(), "前向"),
])
def test_bad_input_to_the_model(call, words):
    with pytest.raises(ValueError, match=words):
        call(BertModel(TINY))


def test_bad_input_to_loss_and_embedding():
    with pytest.raises(ValueError, match="labels 的形状"):
        mlm_loss(torch.zeros(1, 3, 5), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="全是 −100"):
        mlm_loss(torch.zeros(1, 3, 5), torch.full((1, 3), -100))
    with pytest.raises(ValueError, match="一组字符串"):
        sentence_embedding(BertModel(TINY), None, "just one string")


def test_loading_hf_weights_checks_names_and_shapes():
    from tfcourse.bert import hf_parameter_names, load_hf_bert_weights

    torch.manual_seed(0)
    source = BertModel(TINY)
    names = hf_parameter_names(TINY.n_layers)
    tensors = {theirs: source.state_dict()[ours] for ours, theirs in names.items()}
    target = load_hf_bert_weights(BertModel(TINY), tensors)
    ids = torch.tensor([[2, 7, 8, 3]])
    torch.testing.assert_close(target.eval()(ids), source.eval()(ids))
    missing = dict(tensors)
    del missing["encoder.layer.1.output.dense.weight"]
    with pytest.raises(ValueError, match="缺少 1 个参数"):
        load_hf_bert_weights(BertModel(TINY), missing)
    with pytest.raises(ValueError, match="形状"):
        load_hf_bert_weights(BertModel(TINY.replace(d_ff=32)), tensors)


def test_sentence_embedding_does_not_depend_on_the_batch(minilm):
    model, tokenizer, _ = minilm
    together = sentence_embedding(model, tokenizer, SENTENCES, batch_size=len(SENTENCES))
    alone = torch.cat([sentence_embedding(model, tokenizer, [s]) for s in SENTENCES])
    assert (together - alone).abs().max().item() < 1e-5
