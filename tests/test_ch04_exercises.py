"""第 4 章练习的检查：参考实现通过；经典错误（只 view 不 transpose、按 √C 缩放、拼接时忘了换回维度）被抓住，
而且说明的是"数值不对"——形状碰巧是对的，正是这类错误难查的原因。"""
import math

import torch

from tfcourse.exercises import EXERCISES, check


def _view_without_transpose(x, n_heads):
    B, T, C = x.shape
    return x.view(B, n_heads, T, C // n_heads)          # 形状对，元素顺序错


def _mha(x, W_q, W_k, W_v, W_o, n_heads, *, split=None, scale_dim=None, merge_transpose=True):
    B, T, C = x.shape
    D = C // n_heads
    split = split or (lambda t: t.view(B, T, n_heads, D).transpose(1, 2))
    q, k, v = (split(x @ W) for W in (W_q, W_k, W_v))                      # (B, H, T, D)
    scores = q @ k.transpose(-2, -1) / math.sqrt(scale_dim or D)            # (B, H, T, T)
    weights = scores.softmax(dim=-1)
    out = weights @ v                                                       # (B, H, T, D)
    out = out.transpose(1, 2).reshape(B, T, C) if merge_transpose else out.reshape(B, T, C)
    return out @ W_o, weights


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch04.split_heads", "ch04.mha_forward"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_plain_matrix_solution_matches_the_package_module():
    assert check("ch04.mha_forward", _mha).passed


def test_view_without_transpose_fails_with_a_value_message_not_a_shape_message():
    result = check("ch04.split_heads", _view_without_transpose)
    assert not result.passed
    assert all("数值不对" in m and "形状不对" not in m for m in result.messages)
    # 只有 H = 1 或 T = 1 的用例碰巧对：其余用例都要抓住
    lucky = [c for c in EXERCISES["ch04.split_heads"].cases if c.args[1] == 1 or c.args[0].shape[1] == 1]
    assert result.n_passed == len(lucky) == 2


def test_reshape_and_contiguous_variants_pass():
    def with_reshape(x, n_heads):
        B, T, _ = x.shape
        return x.reshape(B, T, n_heads, -1).permute(0, 2, 1, 3).contiguous()

    assert check("ch04.split_heads", with_reshape).passed


def test_view_bug_inside_mha_is_caught_as_wrong_values():
    def buggy(x, W_q, W_k, W_v, W_o, n_heads):
        B, T, C = x.shape
        return _mha(x, W_q, W_k, W_v, W_o, n_heads, split=lambda t: t.view(B, n_heads, T, C // n_heads))

    result = check("ch04.mha_forward", buggy)
    assert not result.passed
    assert any("数值不对" in m for m in result.messages) and not any("形状不对" in m for m in result.messages)


def test_scaling_by_sqrt_d_model_instead_of_sqrt_d_head_is_caught_except_with_one_head():
    def wrong_scale(x, W_q, W_k, W_v, W_o, n_heads):
        return _mha(x, W_q, W_k, W_v, W_o, n_heads, scale_dim=x.shape[-1])

    result = check("ch04.mha_forward", wrong_scale)
    assert not result.passed
    one_head_or_one_position = [c for c in EXERCISES["ch04.mha_forward"].cases if c.args[5] == 1 or c.args[0].shape[1] == 1]
    assert result.n_passed == len(one_head_or_one_position)


def test_merging_without_transpose_is_caught():
    def wrong_merge(x, W_q, W_k, W_v, W_o, n_heads):
        return _mha(x, W_q, W_k, W_v, W_o, n_heads, merge_transpose=False)

    result = check("ch04.mha_forward", wrong_merge)
    assert not result.passed
    assert any("第 1 个返回值：数值不对" in m for m in result.messages)


def test_averaged_weights_are_reported_as_a_shape_problem():
    def averaged(x, W_q, W_k, W_v, W_o, n_heads):
        out, weights = _mha(x, W_q, W_k, W_v, W_o, n_heads)
        return out, weights.mean(dim=1)                          # torch 默认就是这样平均的

    result = check("ch04.mha_forward", averaged)
    assert not result.passed
    assert any("第 2 个返回值：形状不对" in m for m in result.messages)


def test_reference_agrees_with_torch_multihead_attention():
    case = EXERCISES["ch04.mha_forward"].cases[0]
    x, W_q, W_k, W_v, W_o, H = case.args
    C = x.shape[-1]
    torch_mha = torch.nn.MultiheadAttention(C, H, bias=False, batch_first=True).double()
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([W_q.T, W_k.T, W_v.T]))
        torch_mha.out_proj.weight.copy_(W_o.T)
        expected, expected_w = torch_mha(x, x, x, average_attn_weights=False)
    out, w = EXERCISES["ch04.mha_forward"].reference(*case.args)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(w, expected_w)
