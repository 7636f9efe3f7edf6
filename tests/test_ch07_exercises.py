"""第 7 章练习的检查：参考实现通过；常见的错误写法（掩码 True/False 弄反、形状 (B, S)、把 pad_id 写死成 0；
pre-LN、漏了残差、LayerNorm 用错、忽略掩码）都被抓住，并给出能看懂的说明。"""
import torch

from tfcourse import attention
from tfcourse.exercises import EXERCISES, check


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch07.padding_mask", "ch07.encoder_layer_forward"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_building_the_exercises_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    check("ch07.encoder_layer_forward", EXERCISES["ch07.encoder_layer_forward"].reference)
    assert torch.equal(state, torch.random.get_rng_state())


# ---- 练习 A：填充掩码 ----

def test_plain_comparison_passes():
    assert check("ch07.padding_mask", lambda ids, pad_id: (ids != pad_id).unsqueeze(1)).passed


def test_torch_convention_true_means_pad_is_caught_as_wrong_values():
    result = check("ch07.padding_mask", lambda ids, pad_id: (ids == pad_id)[:, None, :])
    assert not result.passed and result.n_passed == 0
    assert all("数值不对" in m for m in result.messages)


def test_missing_middle_dimension_is_caught_as_wrong_shape():
    result = check("ch07.padding_mask", lambda ids, pad_id: ids != pad_id)
    assert not result.passed
    assert all("形状不对" in m for m in result.messages)


def test_hard_coded_pad_zero_fails_only_the_pad_id_3_case():
    result = check("ch07.padding_mask", lambda ids, pad_id: (ids != 0)[:, None, :])
    assert not result.passed and result.n_passed == result.n_cases - 1
    assert "pad_id = 3" in result.messages[0]


def test_integer_mask_is_caught_with_a_dtype_hint():
    result = check("ch07.padding_mask", lambda ids, pad_id: (ids != pad_id)[:, None, :].long())
    assert not result.passed
    assert all("布尔" in m for m in result.messages)


# ---- 练习 B：编码器层的前向 ----

def _post_ln(x, mask, self_attn, ffn, norm1, norm2):
    x = norm1(x + self_attn(x, mask=mask)[0])
    return norm2(x + ffn(x))


def test_straightforward_post_ln_passes():
    assert check("ch07.encoder_layer_forward", _post_ln).passed


def test_pre_ln_is_caught():
    def pre_ln(x, mask, self_attn, ffn, norm1, norm2):
        x = x + self_attn(norm1(x), mask=mask)[0]
        return x + ffn(norm2(x))

    result = check("ch07.encoder_layer_forward", pre_ln)
    assert result.n_passed == 0
    assert all("数值不对" in m for m in result.messages)


def test_forgetting_a_residual_is_caught():
    def no_ffn_residual(x, mask, self_attn, ffn, norm1, norm2):
        x = norm1(x + self_attn(x, mask=mask)[0])
        return norm2(ffn(x))

    assert check("ch07.encoder_layer_forward", no_ffn_residual).n_passed == 0


def test_swapping_the_two_layer_norms_is_caught():
    def swapped(x, mask, self_attn, ffn, norm1, norm2):
        return _post_ln(x, mask, self_attn, ffn, norm2, norm1)

    assert check("ch07.encoder_layer_forward", swapped).n_passed == 0


def test_feeding_the_ffn_the_layer_input_instead_of_the_attention_output_is_caught():
    def wrong_ffn_input(x, mask, self_attn, ffn, norm1, norm2):
        h = norm1(x + self_attn(x, mask=mask)[0])
        return norm2(h + ffn(x))

    assert check("ch07.encoder_layer_forward", wrong_ffn_input).n_passed == 0


def test_ignoring_the_mask_fails_exactly_the_cases_with_real_padding():
    def no_mask(x, mask, self_attn, ffn, norm1, norm2):
        return _post_ln(x, None, self_attn, ffn, norm1, norm2)

    result = check("ch07.encoder_layer_forward", no_mask)
    cases = EXERCISES["ch07.encoder_layer_forward"].cases
    padded = [c for c in cases if c.args[1] is not None and not bool(c.args[1].all())]
    assert not result.passed and result.n_passed == len(cases) - len(padded) == 3


def test_returning_the_attention_tuple_gets_a_readable_message():
    def returns_tuple(x, mask, self_attn, ffn, norm1, norm2):
        out = self_attn(x, mask=mask)                                # 忘了取 [0]：(输出, 权重)
        return norm1(x + out)

    result = check("ch07.encoder_layer_forward", returns_tuple)
    assert not result.passed and all("TypeError" in m for m in result.messages)


def test_the_mask_case_really_uses_padding():
    masks = [c.args[1] for c in EXERCISES["ch07.encoder_layer_forward"].cases if c.args[1] is not None]
    assert any(not bool(m.all()) for m in masks)
    assert all(m.dtype == torch.bool and m.dim() == 3 and m.shape[1] == 1 for m in masks)
    assert torch.equal(masks[0], attention.padding_mask(torch.tensor([6, 3]), max_len=6))
