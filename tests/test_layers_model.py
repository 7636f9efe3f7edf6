"""layers 与 model：与 torch.nn.Transformer* 逐位对照、因果性、填充、参数个数、过拟合一个批次、错误信息。"""
import pytest
import torch
from torch import nn

from tfcourse.attention import causal_mask
from tfcourse.layers import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward
from tfcourse.model import BASE, PRESETS, TINY, Transformer, TransformerConfig, copy_from_torch, count_parameters

pytestmark = pytest.mark.numerics   # 与参考实现的数值对照：make numerics 在另一条 CPU 路径上再跑

C, H, F = 32, 4, 64
ATOL = 2e-6          # float32：两边的运算顺序略有不同


def _pad_mask(lengths, S):
    return torch.arange(S)[None] >= torch.as_tensor(lengths)[:, None]      # torch 约定：True = 填充


def _max_diff(a, b):
    return (a - b).abs().max().item()


@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "relu"), (False, "gelu"), (True, "gelu")])
def test_encoder_layer_matches_torch(norm_first, activation):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(C, H, F, dropout=0.0, batch_first=True, norm_first=norm_first,
                                     activation=activation).eval()
    ours = copy_from_torch(EncoderLayer(C, H, F, 0.0, norm_first=norm_first, activation=activation), ref).eval()
    x = torch.randn(3, 7, C)
    pad = _pad_mask([7, 5, 2], 7)
    with torch.no_grad():
        want = ref(x, src_key_padding_mask=pad)
        assert _max_diff(ours(x), ref(x)) < ATOL
        got = ours(x, (~pad)[:, None])
        assert _max_diff(got, want) < ATOL
    assert ours.attn_weights.shape == (3, H, 7, 7)
    assert torch.all(ours.attn_weights[2, :, :, 2:] == 0)            # 填充位置拿不到权重


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    torch.manual_seed(1)
    ref = nn.TransformerDecoderLayer(C, H, F, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    ours = copy_from_torch(DecoderLayer(C, H, F, 0.0, norm_first=norm_first), ref).eval()
    x, memory = torch.randn(3, 5, C), torch.randn(3, 7, C)
    pad = _pad_mask([7, 4, 1], 7)
    with torch.no_grad():
        want = ref(x, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
                   memory_key_padding_mask=pad, tgt_is_causal=True)
        got = ours(x, memory, causal_mask(5), (~pad)[:, None])
    assert _max_diff(got, want) < ATOL
    assert ours.cross_attn_weights.shape == (3, H, 5, 7)
    assert torch.all(ours.self_attn_weights.triu(1) == 0)             # 因果：看不到未来


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_match_torch(norm_first):
    torch.manual_seed(2)
    enc_layer = nn.TransformerEncoderLayer(C, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    ref_enc = nn.TransformerEncoder(enc_layer, 3, norm=nn.LayerNorm(C), enable_nested_tensor=False).eval()
    ours_enc = copy_from_torch(Encoder(EncoderLayer(C, H, F, 0.0, norm_first=norm_first), 3), ref_enc).eval()
    dec_layer = nn.TransformerDecoderLayer(C, H, F, dropout=0.0, batch_first=True, norm_first=norm_first)
    ref_dec = nn.TransformerDecoder(dec_layer, 3, norm=nn.LayerNorm(C)).eval()
    ours_dec = copy_from_torch(Decoder(DecoderLayer(C, H, F, 0.0, norm_first=norm_first), 3), ref_dec).eval()
    x, y = torch.randn(2, 6, C), torch.randn(2, 4, C)
    pad = _pad_mask([6, 3], 6)
    with torch.no_grad():
        mem_ref = ref_enc(x, src_key_padding_mask=pad)
        mem = ours_enc(x, (~pad)[:, None])
        assert _max_diff(mem, mem_ref) < 5 * ATOL
        out_ref = ref_dec(y, mem_ref, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4),
                          memory_key_padding_mask=pad, tgt_is_causal=True)
        out = ours_dec(y, mem, causal_mask(4), (~pad)[:, None])
    assert _max_diff(out, out_ref) < 5 * ATOL


def _model_and_reference(cfg, seed=0):
    torch.manual_seed(seed)
    model = Transformer(cfg).eval()
    ref = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.n_layers, cfg.d_ff, dropout=0.0,
                         batch_first=True, norm_first=cfg.norm_first).eval()
    return copy_from_torch(model, ref), ref


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("norm_first", [False, True])
def test_full_model_matches_torch_transformer(norm_first):
    cfg = TINY.replace(src_vocab_size=20, tgt_vocab_size=18, norm_first=norm_first)
    model, ref = _model_and_reference(cfg)
    src = torch.randint(1, 20, (3, 9))
    src[1, 6:] = 0
    src[2, 3:] = 0
    tgt = torch.randint(1, 18, (3, 6))
    with torch.no_grad():
        logits = model(src, tgt)
        out = ref(model.embed(src, model.src_embed), model.embed(tgt, model.tgt_embed),
                  tgt_mask=nn.Transformer.generate_square_subsequent_mask(6), tgt_is_causal=True,
                  src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
        want = model.generator(out)
    assert logits.shape == (3, 6, 18)
    assert _max_diff(logits, want) < 1e-5


def test_encode_decode_equal_forward_and_weights_are_retrievable():
    torch.manual_seed(3)
    model = Transformer(TINY).eval()
    src, tgt = torch.randint(1, 16, (2, 7)), torch.randint(1, 16, (2, 5))
    src[0, 4:] = 0
    with torch.no_grad():
        a = model(src, tgt)
        b = model.decode(tgt, model.encode(src), model.source_mask(src))
    assert torch.equal(a, b)
    w = model.attention_weights()
    assert [t.shape for t in w["cross"]] == [(2, 4, 5, 7)] * TINY.n_layers
    assert [t.shape for t in w["encoder"]] == [(2, 4, 7, 7)] * TINY.n_layers
    assert torch.all(w["cross"][0][0, :, :, 4:] == 0)
    torch.testing.assert_close(w["cross"][-1].sum(-1), torch.ones(2, 4, 5))


def test_causality_changing_target_token_t_leaves_earlier_logits_unchanged():
    torch.manual_seed(4)
    model = Transformer(TINY).eval()
    src, tgt = torch.randint(1, 16, (2, 6)), torch.randint(1, 16, (2, 8))
    with torch.no_grad():
        base = model(src, tgt)
        for t in range(1, 8):
            changed = tgt.clone()
            changed[:, t] = (changed[:, t] % 15) + 1
            out = model(src, changed)
            assert torch.equal(out[:, :t], base[:, :t])
            assert not torch.allclose(out[:, t:], base[:, t:])        # 之后的位置确实看到了改动


def test_appending_source_padding_changes_no_logits():
    torch.manual_seed(5)
    model = Transformer(TINY).eval()
    src, tgt = torch.randint(1, 16, (2, 6)), torch.randint(1, 16, (2, 5))
    padded = torch.cat([src, torch.zeros(2, 4, dtype=torch.long)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(padded, tgt), model(src, tgt), atol=1e-5, rtol=0)   # 只差求和顺序
        other = src.clone()
        other[:, -1] = (other[:, -1] % 15) + 1                         # 对照：改一个真 token 会变
        assert not torch.allclose(model(other, tgt), model(src, tgt))


def test_base_config_parameter_count():
    model = Transformer(BASE)
    n = count_parameters(model)
    stack = nn.Transformer(512, 8, 6, 6, 2048)
    assert n == count_parameters(stack) + 37000 * 512 == 63_084_544
    assert model.generator.weight is model.tgt_embed.weight is model.src_embed.weight
    untied = Transformer(BASE.replace(share_embeddings=False, tie_output=False))
    assert count_parameters(untied) == n + 2 * 37000 * 512 + 37000    # 两张表 + 输出层（带偏置）
    assert set(PRESETS) >= {"tiny", "base"}


def test_tiny_model_overfits_one_batch():
    torch.manual_seed(6)
    model = Transformer(TINY)
    src, tgt = torch.randint(1, 16, (8, 7)), torch.randint(3, 16, (8, 7))
    tgt[:, 0] = 1
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(150):
        logits = model(src, tgt[:, :-1])
        loss = loss_fn(logits.reshape(-1, 16), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.02
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(src, tgt[:, :-1]).argmax(-1), tgt[:, 1:])


def test_feedforward_is_position_wise():
    torch.manual_seed(7)
    ffn = FeedForward(8, 32)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(ffn(x)[:, 3], ffn(x[:, 3:4])[:, 0])
    assert ffn(x).shape == x.shape


@pytest.mark.parametrize(("kwargs", "words"), [
    (dict(d_model=30, n_heads=4), ["d_model", "n_heads", "30", "4"]),
    (dict(dropout=1.5), ["dropout", "1.5"]),
    (dict(pad_id=99), ["pad_id", "99"]),
    (dict(n_layers=0), ["n_layers", "0"]),
    (dict(share_embeddings=True, tgt_vocab_size=17), ["share_embeddings", "17"]),
])
def test_bad_config_errors_are_chinese_and_specific(kwargs, words):
    base = dict(src_vocab_size=16, tgt_vocab_size=16, d_model=32, n_heads=4)
    with pytest.raises(ValueError) as err:
        TransformerConfig(**{**base, **kwargs})
    assert all(w in str(err.value) for w in words), str(err.value)


def test_config_is_frozen():
    with pytest.raises(Exception):
        TINY.d_model = 64
    assert TINY.replace(d_model=64).d_model == 64 and TINY.d_model == 32


@pytest.mark.parametrize(("src", "words"), [
    (torch.tensor([[1, 2, 16]]), ["越界", "16", "0 到 15"]),
    (torch.tensor([[1, -1]]), ["越界", "-1"]),
    (torch.tensor([[1.0, 2.0]]), ["int64", "float32"]),
    (torch.tensor([1, 2]), ["(B, 长度)", "(2,)"]),
    (torch.ones(1, 65, dtype=torch.long), ["65", "max_len=64"]),
])
def test_bad_token_ids_are_explained(src, words):
    model = Transformer(TINY)
    with pytest.raises(ValueError) as err:
        model(src, torch.ones(1, 3, dtype=torch.long))
    assert all(w in str(err.value) for w in words), str(err.value)


def test_copy_from_torch_refuses_mismatches():
    with pytest.raises(ValueError, match="norm_first"):
        copy_from_torch(EncoderLayer(C, H, F), nn.TransformerEncoderLayer(C, H, F, batch_first=True, norm_first=True))
    with pytest.raises(ValueError, match="d_ff"):
        copy_from_torch(EncoderLayer(C, H, F), nn.TransformerEncoderLayer(C, H, 2 * F, batch_first=True))
    with pytest.raises(ValueError, match="激活函数"):
        copy_from_torch(EncoderLayer(C, H, F), nn.TransformerEncoderLayer(C, H, F, activation="gelu", batch_first=True))
    with pytest.raises(ValueError, match="activation"):
        FeedForward(C, F, activation="swish")
    with pytest.raises(ValueError, match="TransformerDecoderLayer"):
        copy_from_torch(DecoderLayer(C, H, F), nn.TransformerEncoderLayer(C, H, F, batch_first=True))
    with pytest.raises(ValueError, match="层数"):
        copy_from_torch(Encoder(EncoderLayer(C, H, F), 2),
                        nn.TransformerEncoder(nn.TransformerEncoderLayer(C, H, F, batch_first=True), 3,
                                              enable_nested_tensor=False))


def test_layer_input_errors():
    layer = EncoderLayer(C, H, F)
    with pytest.raises(ValueError, match="浮点"):
        layer(torch.ones(1, 3, C, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, 长度, 32\)"):
        layer(torch.randn(3, C))
