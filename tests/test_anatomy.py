import json

import pytest
import torch
from torch import nn

from tfcourse.anatomy import model_blocks
from tfcourse.model import BASE, TINY, Transformer, count_parameters

ENC_POST = ["src_embed", "src_pos", "enc.self_attn", "enc.norm1", "enc.ffn", "enc.norm2", "enc.final_norm"]
DEC_POST = ["tgt_embed", "tgt_pos", "dec.self_attn", "dec.norm1", "dec.cross_attn", "dec.norm2", "dec.ffn",
            "dec.norm3", "dec.final_norm", "generator", "softmax"]


@pytest.fixture(scope="module")
def base_model():
    return Transformer(BASE)


@pytest.fixture(scope="module")
def base_blocks(base_model):
    return {b["id"]: b for b in model_blocks(base_model)}


def _ids(blocks, group):
    return [b["id"] for b in blocks if b["group"] == group]


VARIANTS = {
    "tiny": TINY,
    "tiny-untied": TINY.replace(tie_output=False),
    "tiny-shared": TINY.replace(share_embeddings=True),
    "tiny-shared-untied": TINY.replace(share_embeddings=True, tie_output=False),
    "tiny-norm-first": TINY.replace(norm_first=True),
    "tiny-no-final-norm": TINY.replace(final_norm=False),
    "tiny-one-layer": TINY.replace(n_layers=1),
    "base": BASE,
    "base-unshared-untied": BASE.replace(share_embeddings=False, tie_output=False, n_layers=2),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_block_totals_add_up_to_the_model(name, request):
    model = request.getfixturevalue("base_model") if name == "base" else Transformer(VARIANTS[name])
    blocks = model_blocks(model)
    assert sum(b["total_params"] for b in blocks) == count_parameters(model)
    for b in blocks:
        assert b["total_params"] == b["params"] * b["repeat"]
        in_layer = "." in b["id"] and not b["id"].endswith("final_norm")
        assert b["repeat"] == (model.config.n_layers if in_layer else 1), b["id"]


def test_base_model_counts(base_blocks):
    b = base_blocks
    assert b["enc.ffn"]["params"] == 512 * 2048 + 2048 + 2048 * 512 + 512 == 2_099_712
    assert b["enc.ffn"]["total_params"] == 6 * 2_099_712
    assert b["enc.self_attn"]["params"] == b["dec.cross_attn"]["params"] == 4 * (512 * 512 + 512) == 1_050_624
    assert b["enc.norm1"]["params"] == b["dec.norm3"]["params"] == b["enc.final_norm"]["params"] == 1_024
    assert b["src_embed"]["params"] == 37000 * 512 == 18_944_000
    assert b["tgt_embed"]["params"] == 0 and "与源词嵌入共用" in b["tgt_embed"]["detail"]
    assert b["generator"]["params"] == 0 and "与目标词嵌入共用权重" in b["generator"]["detail"]
    assert b["src_pos"]["params"] == b["softmax"]["params"] == 0
    assert "d_ff = 2048" in b["enc.ffn"]["detail"] and "max(0, xW₁ + b₁)W₂ + b₂" in b["enc.ffn"]["detail"]
    assert b["enc.ffn"]["name"] == "encoder.layers.0.ffn" and b["dec.cross_attn"]["name"] == "decoder.layers.0.cross_attn"
    assert all(x["shape"] == "" for x in b.values())                      # 没给 src/tgt：不追踪


def test_untied_unshared_counts_and_details():
    c = TINY.replace(tie_output=False)
    b = {x["id"]: x for x in model_blocks(Transformer(c))}
    V, C = c.tgt_vocab_size, c.d_model
    assert b["generator"]["params"] == V * C + V and "共用" not in b["generator"]["detail"]
    assert b["tgt_embed"]["params"] == V * C and "共用" not in b["tgt_embed"]["detail"]
    tied = {x["id"]: x for x in model_blocks(Transformer(TINY))}
    assert tied["generator"]["params"] == 0 and tied["tgt_embed"]["params"] == V * C


def test_names_point_at_the_modules_they_count():
    model = Transformer(TINY)
    modules = dict(model.named_modules())
    for b in model_blocks(model):
        if b["params"]:
            assert count_parameters(modules[b["name"]]) == b["params"], b["id"]


def test_shapes_are_traced_with_forward_hooks():
    torch.manual_seed(0)
    model = Transformer(TINY)
    src, tgt = torch.randint(1, 16, (2, 9)), torch.randint(1, 16, (2, 5))
    blocks = model_blocks(model, src, tgt)
    for b in blocks:
        if b["id"] in ("generator", "softmax"):
            assert b["shape"] == "(B=2, T=5, V=16)"
        elif b["group"] == "encoder":
            assert b["shape"] == "(B=2, S=9, C=32)", b["id"]
        else:
            assert b["shape"] == "(B=2, T=5, C=32)", b["id"]
    wide = model_blocks(Transformer(TINY.replace(tgt_vocab_size=40, d_model=16, n_heads=2)), src, tgt[:, :3])
    shapes = {b["id"]: b["shape"] for b in wide}
    assert shapes["generator"] == "(B=2, T=3, V=40)" and shapes["dec.ffn"] == "(B=2, T=3, C=16)"
    assert shapes["src_embed"] == "(B=2, S=9, C=16)"


def test_shared_embedding_traces_both_sides():
    model = Transformer(TINY.replace(share_embeddings=True))
    shapes = {b["id"]: b["shape"] for b in model_blocks(model, torch.ones(3, 7, dtype=torch.long),
                                                           torch.ones(3, 4, dtype=torch.long))}
    assert shapes["src_embed"] == "(B=3, S=7, C=32)" and shapes["tgt_embed"] == "(B=3, T=4, C=32)"


def test_tracing_leaves_the_model_as_it_was():
    model = Transformer(TINY.replace(dropout=0.5))
    src, tgt = torch.randint(1, 16, (1, 4)), torch.randint(1, 16, (1, 3))
    model.eval()
    model(src[:, :2], tgt[:, :2])
    before = [w.clone() for w in model.attention_weights()["encoder"]]
    model.train()
    model_blocks(model, src, tgt)
    assert model.training
    after = model.attention_weights()["encoder"]
    assert all(torch.equal(a, b) for a, b in zip(before, after)) and after[0].shape[-1] == 2
    assert not model.encoder.layers[0].self_attn._forward_hooks                # 钩子都摘掉了


def test_blocks_follow_the_data_flow():
    blocks = model_blocks(Transformer(TINY))
    assert _ids(blocks, "encoder") == ENC_POST and _ids(blocks, "decoder") == DEC_POST
    labels = {b["id"]: b["label"] for b in blocks}
    assert labels["enc.self_attn"] == "多头自注意力 Multi-Head Attention"
    assert labels["enc.norm1"] == labels["dec.norm3"] == "Add & Norm（残差 + 层归一化）"
    assert labels["dec.self_attn"].startswith("掩码多头自注意力")
    assert labels["dec.cross_attn"] == "交叉注意力 Cross-Attention"
    assert labels["enc.ffn"] == "前馈网络 FFN" and labels["generator"] == "输出层 Linear" and labels["softmax"] == "Softmax"
    assert "×√d_model" in labels["src_embed"] and labels["src_pos"].startswith("位置编码（正弦，无参数）")
    assert {b["kind"] for b in blocks} == {"embed", "pos", "attn", "norm", "ffn", "linear", "softmax"}
    json.dumps(blocks)


def test_pre_ln_puts_the_norm_before_each_sublayer():
    blocks = model_blocks(Transformer(TINY.replace(norm_first=True)))
    assert _ids(blocks, "encoder") == ["src_embed", "src_pos", "enc.norm1", "enc.self_attn", "enc.norm2", "enc.ffn",
                                       "enc.final_norm"]
    assert _ids(blocks, "decoder")[2:8] == ["dec.norm1", "dec.self_attn", "dec.norm2", "dec.cross_attn", "dec.norm3",
                                            "dec.ffn"]
    b = {x["id"]: x for x in blocks}
    assert b["enc.norm2"]["label"] == "LayerNorm（pre-LN：先归一化）" and "Add" not in b["dec.norm1"]["label"]
    assert "残差相加" in b["enc.ffn"]["detail"] and "x + 子层(LN(x))" in b["dec.cross_attn"]["detail"]


def test_final_norm_blocks_follow_the_config():
    ids = [b["id"] for b in model_blocks(Transformer(TINY.replace(final_norm=False)))]
    assert "enc.final_norm" not in ids and "dec.final_norm" not in ids
    assert ids[-2:] == ["generator", "softmax"] and len(ids) == len(ENC_POST) + len(DEC_POST) - 2


def test_bad_inputs_raise_chinese_errors():
    model = Transformer(TINY)
    src, tgt = torch.ones(2, 9, dtype=torch.long), torch.ones(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="tfcourse.model.Transformer"):
        model_blocks(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="要么都给"):
        model_blocks(model, src)
    with pytest.raises(ValueError, match=r"src 应为形状 \(B, 长度\)"):
        model_blocks(model, torch.ones(9, dtype=torch.long), tgt)
    with pytest.raises(ValueError, match="批大小应相同"):
        model_blocks(model, src, tgt[:1])
    with pytest.raises(ValueError, match="越界的 token id 16"):
        model_blocks(model, src, tgt + 15)
    assert not model.encoder.layers[0].ffn._forward_hooks                      # 出错时钩子也摘掉了
    model.extra = nn.Linear(2, 2)                                              # 图里没有的子模块
    with pytest.raises(ValueError, match="参数之和"):
        model_blocks(model)
