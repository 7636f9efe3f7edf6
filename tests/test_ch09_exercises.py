"""第 9 章练习的检查：参考实现与课程包的模型一致（embed、count_parameters）；常见错误被抓住，并说清错在哪里。"""
import math

import pytest
import torch

from tfcourse.exercises import EXERCISES, check
from tfcourse.model import Transformer, count_parameters


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch09.embed", "ch09.count_parameters"):
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


@pytest.mark.parametrize("case_index", range(len(EXERCISES["ch09.count_parameters"].cases)))
def test_count_reference_equals_count_parameters_of_a_real_model(case_index):
    config = EXERCISES["ch09.count_parameters"].cases[case_index].args[0]
    with torch.device("meta"):                      # 只要形状：不分配内存，BASE 也很快
        model = Transformer(config)
    assert EXERCISES["ch09.count_parameters"].reference(config) == count_parameters(model)


def test_base_counts_match_the_chapter():
    ref = EXERCISES["ch09.count_parameters"].reference
    base = EXERCISES["ch09.count_parameters"].cases[2].args[0]
    assert ref(base) == 63_084_544
    assert ref(base.replace(tie_output=False)) == 63_084_544 + 37_000 * 512 + 37_000


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


def test_count_forgetting_the_untied_bias_is_caught():
    ref = EXERCISES["ch09.count_parameters"].reference

    def no_bias(c):
        return ref(c) - (0 if c.tie_output else c.tgt_vocab_size)

    result = check("ch09.count_parameters", no_bias)
    assert not result.passed
    untied = [case for case in EXERCISES["ch09.count_parameters"].cases if not case.args[0].tie_output]
    assert result.n_cases - result.n_passed == len(untied) == 2
    assert all("数值不对" in m for m in result.messages)


def test_count_ignoring_tying_and_sharing_is_caught():
    ref = EXERCISES["ch09.count_parameters"].reference

    def count_every_table(c):
        return (ref(c) + (c.tgt_vocab_size * c.d_model if c.share_embeddings else 0)
                + (c.tgt_vocab_size * c.d_model + c.tgt_vocab_size if c.tie_output else 0))

    result = check("ch09.count_parameters", count_every_table)
    assert not result.passed
    assert result.n_passed == 1                                   # 只有"既不共享也不绑定"的那一例碰巧对


def test_count_forgetting_final_norms_is_caught():
    ref = EXERCISES["ch09.count_parameters"].reference

    def no_final_norm(c):
        return ref(c) - (4 * c.d_model if c.final_norm else 0)

    result = check("ch09.count_parameters", no_final_norm)
    assert not result.passed
    assert result.n_passed == 1                                   # 只有 final_norm=False 的那一例


def test_count_is_exact_for_base():
    ref = EXERCISES["ch09.count_parameters"].reference
    result = check("ch09.count_parameters", lambda c: ref(c) + (1 if c.src_vocab_size == 37_000 else 0))
    assert not result.passed                                      # 差 1 个参数也算错（不用相对误差）
