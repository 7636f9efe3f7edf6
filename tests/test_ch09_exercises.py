"""第 9 章练习的检查：参考实现与课程包的模型一致（embed、torch_logits）；常见错误被抓住，并说清错在哪里。"""
import math

import numpy as np
import pytest
import torch

from tfcourse.attention import causal_mask
from tfcourse.exercises import EXERCISES, check
from tfcourse.model import Transformer


def _torch_route(model, ref, src, tgt, *, invert=True, tgt_padding=True, memory_padding=True, scale=True,
                 pad_id=None):
    """第 4 节的做法：torch 的两个栈吃课程包嵌入好的向量，再经过课程包的输出层；关键字参数造出常见的错误写法。"""
    pad = model.config.pad_id if pad_id is None else pad_id

    def flip(mask):
        return mask if invert else ~mask

    masks = dict(src_key_padding_mask=flip(src == pad), tgt_mask=flip(~causal_mask(tgt.shape[1])))
    if memory_padding:
        masks["memory_key_padding_mask"] = flip(src == pad)
    if tgt_padding:
        masks["tgt_key_padding_mask"] = flip(tgt == pad)

    def embed(ids, table):
        if scale:
            return model.embed(ids, table)
        return table(ids) + model.pe[: ids.shape[1]]

    return model.generator(ref(embed(src, model.src_embed), embed(tgt, model.tgt_embed), **masks))


def _cases():
    return EXERCISES["ch09.torch_logits"].cases


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch09.embed", "ch09.torch_logits"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_embed_reference_equals_the_model_embedding_step():
    ex = EXERCISES["ch09.embed"]
    for case in ex.cases:
        ids, weight, pe = case.args
        V, C = weight.shape
        from tfcourse.model import TransformerConfig

        config = TransformerConfig(src_vocab_size=V, tgt_vocab_size=V, d_model=C, n_heads=2 if C % 2 == 0 else 1,
                                   n_layers=1, d_ff=8, dropout=0.0, max_len=pe.shape[0])
        model = Transformer(config)
        with torch.no_grad():
            model.src_embed.weight.copy_(weight)
        torch.testing.assert_close(model.pe, pe)
        torch.testing.assert_close(ex.reference(ids, weight, pe), model.embed(ids, model.src_embed))


def test_embed_without_scale_fails():
    result = check("ch09.embed", lambda ids, w, pe: w[ids] + pe[: ids.shape[1]])
    assert not result.passed and result.n_passed == 0
    assert all("数值不对" in m for m in result.messages)


def test_embed_scaling_the_position_too_fails():
    result = check("ch09.embed", lambda ids, w, pe: (w[ids] + pe[: ids.shape[1]]) * math.sqrt(w.shape[1]))
    assert not result.passed and result.n_passed == 0


def test_embed_dividing_by_sqrt_d_fails():
    result = check("ch09.embed", lambda ids, w, pe: w[ids] / math.sqrt(w.shape[1]) + pe[: ids.shape[1]])
    assert not result.passed and result.n_passed == 0


def test_embed_slicing_pe_by_batch_size_is_caught():
    result = check("ch09.embed", lambda ids, w, pe: w[ids] * math.sqrt(w.shape[1]) + pe[: ids.shape[0], None])
    assert not result.passed and result.n_passed == 0          # 每个用例都是 B ≠ L 或 B = 1 而 L > 1


def test_embed_using_scale_of_vocab_size_is_caught():
    result = check("ch09.embed", lambda ids, w, pe: w[ids] * math.sqrt(w.shape[0]) + pe[: ids.shape[1]])
    assert not result.passed


def test_cases_pair_a_torch_transformer_with_the_course_model_holding_the_same_stacks():
    for case in _cases():
        model, ref, src, tgt = case.args
        assert isinstance(model, Transformer) and isinstance(ref, torch.nn.Transformer)
        assert not model.training and not ref.training
        for ours, theirs in ((model.encoder.layers[0].ffn.linear1.weight, ref.encoder.layers[0].linear1.weight),
                             (model.decoder.norm.bias, ref.decoder.norm.bias)):
            assert torch.equal(ours, theirs)


def test_the_torch_route_passes_every_case_and_matches_the_model_to_rounding():
    result = check("ch09.torch_logits", _torch_route)
    assert result.passed, result.summary()
    for case in _cases():
        model, ref, src, tgt = case.args
        with torch.no_grad():
            assert (_torch_route(model, ref, src, tgt) - model(src, tgt)).abs().max() < 1e-12


def test_forgetting_tgt_key_padding_mask_fails_exactly_the_cases_with_target_padding():
    result = check("ch09.torch_logits", lambda *a: _torch_route(*a, tgt_padding=False))
    padded = [i for i, case in enumerate(_cases(), start=1)
              if (case.args[3] == case.args[0].config.pad_id).any()]
    failed = [i for i, case in enumerate(_cases(), start=1) if any(m.startswith(f"用例 {i}（") for m in result.messages)]
    assert failed == padded and len(padded) >= 3
    assert all("数值不对" in m for m in result.messages)


def test_forgetting_memory_key_padding_mask_is_caught():
    result = check("ch09.torch_logits", lambda *a: _torch_route(*a, memory_padding=False))
    assert not result.passed


def test_passing_the_course_masks_without_inverting_is_caught():
    result = check("ch09.torch_logits", lambda *a: _torch_route(*a, invert=False))
    assert not result.passed and result.n_passed == 0


def test_skipping_the_sqrt_scale_is_caught():
    result = check("ch09.torch_logits", lambda *a: _torch_route(*a, scale=False))
    assert not result.passed and result.n_passed == 0


def test_hard_coding_pad_zero_is_caught():
    result = check("ch09.torch_logits", lambda *a: _torch_route(*a, pad_id=0))
    assert result.n_cases - result.n_passed == 1
    assert any("pad_id = 3" in m for m in result.messages)


def test_generated_hidden_cases_check_the_same_thing():
    ex = EXERCISES["ch09.torch_logits"]
    for seed in range(3):
        cases = ex.generate(np.random.default_rng(seed))
        assert len(cases) == 3
        assert check("ch09.torch_logits", _torch_route, cases=cases).passed
        assert not check("ch09.torch_logits", lambda *a: _torch_route(*a, invert=False), cases=cases).passed


def test_building_the_cases_leaves_the_global_random_state_alone():
    import importlib

    import tfcourse.exercises.ch09 as ch09

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ch09._cases_torch_logits()
    ch09._generate_torch_logits(np.random.default_rng(0))
    assert torch.equal(torch.rand(3), expected)
    assert importlib.import_module("tfcourse.exercises.ch09") is ch09
