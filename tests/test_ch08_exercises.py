"""第 8 章练习的检查：参考实现通过、与 Transformer.target_mask 一致；常见错误（只有因果掩码、填充挡在查询上、
上三角、把 pad 写死成 0、EOS 接在补齐之后、忘了右移）被抓住，而且说明有用。"""
import torch

from tfcourse import attention
from tfcourse.exercises import EXERCISES, check
from tfcourse.model import TINY, Transformer


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch08.decoder_self_mask", "ch08.shift_targets"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_decoder_self_mask_reference_equals_transformer_target_mask():
    for case in EXERCISES["ch08.decoder_self_mask"].cases:
        tgt, pad_id = case.args
        model = Transformer(TINY.replace(pad_id=pad_id))
        expected = model.target_mask(tgt)
        got = EXERCISES["ch08.decoder_self_mask"].reference(tgt, pad_id)
        assert got.dtype == torch.bool and torch.equal(got, expected), case.description


def test_hidden_cases_cover_the_promised_edge_cases():
    mask_cases = EXERCISES["ch08.decoder_self_mask"].cases
    assert any(c.args[0].shape[1] == 1 for c in mask_cases)                       # T = 1
    assert any(c.args[1] != 0 for c in mask_cases)                                # pad_id 不是 0
    ref = EXERCISES["ch08.decoder_self_mask"].reference
    assert any(not bool(ref(*c.args).any(dim=-1).all()) for c in mask_cases)      # 有整行不许看的（左填充）
    shift_cases = EXERCISES["ch08.shift_targets"].cases
    assert any(bool((c.args[0] == c.args[3]).all(dim=1).any()) for c in shift_cases)   # 空句子
    assert any(c.args[0].shape[1] == 1 for c in shift_cases)                      # L = 1
    assert any(c.args[1:] != (1, 2, 0) for c in shift_cases)                      # 特殊符号编号不同


def test_causal_only_mask_fails_on_padded_cases():
    def causal_only(tgt, pad_id):
        B, T = tgt.shape
        return attention.causal_mask(T)[None].expand(B, T, T)

    result = check("ch08.decoder_self_mask", causal_only)
    assert not result.passed and result.n_passed == 2                             # 只有没有填充的两个用例碰巧对
    assert all("数值不对" in m for m in result.messages)


def test_padding_on_the_query_axis_and_upper_triangle_fail():
    def pad_on_queries(tgt, pad_id):
        T = tgt.shape[1]
        return attention.causal_mask(T)[None] & (tgt != pad_id)[:, :, None]    # 挡的是行（查询），错

    def upper(tgt, pad_id):
        T = tgt.shape[1]
        return torch.ones(T, T, dtype=torch.bool).triu()[None] & (tgt != pad_id)[:, None, :]

    assert not check("ch08.decoder_self_mask", pad_on_queries).passed
    result = check("ch08.decoder_self_mask", upper)
    assert not result.passed and result.n_passed == 1                             # 只有 T = 1 碰巧对


def test_hard_coded_pad_zero_and_integer_masks_are_caught():
    def pad_zero(tgt, pad_id):
        T = tgt.shape[1]
        return attention.causal_mask(T)[None] & (tgt != 0)[:, None, :]

    def as_int(tgt, pad_id):
        return EXERCISES["ch08.decoder_self_mask"].reference(tgt, pad_id).int()

    result = check("ch08.decoder_self_mask", pad_zero)
    assert not result.passed and result.n_passed == result.n_cases - 1
    assert any("pad_id = 3" in m for m in result.messages)
    result = check("ch08.decoder_self_mask", as_int)
    assert not result.passed and all("布尔" in m for m in result.messages)


def test_eos_after_the_padding_is_caught():
    def eos_at_the_end(y, bos_id, eos_id, pad_id):
        B = y.shape[0]
        tgt_in = torch.cat([torch.full((B, 1), bos_id), y], dim=1)
        tgt_out = torch.cat([y, torch.full((B, 1), eos_id)], dim=1)          # EOS 接在补齐的 pad 后面，错
        return tgt_in, tgt_out

    result = check("ch08.shift_targets", eos_at_the_end)
    assert not result.passed and result.n_passed == 2                             # 没有填充的两个用例碰巧对
    assert all("第 2 个返回值" in m and "数值不对" in m for m in result.messages)


def test_forgetting_the_shift_and_dropping_a_token_fail():
    def no_shift(y, bos_id, eos_id, pad_id):
        _, tgt_out = EXERCISES["ch08.shift_targets"].reference(y, bos_id, eos_id, pad_id)
        return tgt_out.clone(), tgt_out                                          # 输入就是答案：常见坑 2

    def drop_last(y, bos_id, eos_id, pad_id):
        B = y.shape[0]
        return torch.cat([torch.full((B, 1), bos_id), y[:, :-1]], dim=1), y      # 长度 L，不是 L + 1

    result = check("ch08.shift_targets", no_shift)
    assert not result.passed and result.n_passed == 0
    assert all("第 1 个返回值" in m for m in result.messages)
    result = check("ch08.shift_targets", drop_last)
    assert not result.passed and result.n_passed == 0
    assert all("形状不对" in m for m in result.messages)


def test_hard_coded_special_ids_fail_only_on_the_custom_id_case():
    def fixed_ids(y, bos_id, eos_id, pad_id):
        return EXERCISES["ch08.shift_targets"].reference(y, 1, 2, 0)

    result = check("ch08.shift_targets", fixed_ids)
    assert not result.passed and result.n_passed == result.n_cases - 1
    assert any("10、11、12" in m for m in result.messages)
