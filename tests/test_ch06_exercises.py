"""第 6 章练习的检查：参考实现通过；常见的错误写法（无偏方差、eps 放在根号外、忘了 eps、沿错的维度归一化；
数参数时漏掉偏置或 LayerNorm、把绑定的输出层再算一遍、忘了不绑定时输出层有偏置）都被抓住。"""
import torch

from tfcourse.exercises import EXERCISES, check
from tfcourse.model import BASE, Transformer, count_parameters


def _layer_norm(x, weight, bias, eps, *, unbiased=False, eps_outside=False, dim=-1):
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, unbiased=unbiased, keepdim=True)
    denom = var.sqrt() + eps if eps_outside else (var + eps).sqrt()
    return (x - mu) / denom * weight + bias


def _count(cfg, *, attn_bias=True, norms=True, final=True, double_tied=False, untied_bias=True):
    C, F, L = cfg.d_model, cfg.d_ff, cfg.n_layers
    attn = 4 * C * C + (4 * C if attn_bias else 0)
    ffn = C * F + F + F * C + C
    ln = 2 * C if norms else 0
    layers = L * ((attn + ffn + 2 * ln) + (2 * attn + ffn + 3 * ln))
    emb = cfg.src_vocab_size * C if cfg.share_embeddings else (cfg.src_vocab_size + cfg.tgt_vocab_size) * C
    if cfg.tie_output:
        out = cfg.tgt_vocab_size * C if double_tied else 0
    else:
        out = cfg.tgt_vocab_size * C + (cfg.tgt_vocab_size if untied_bias else 0)
    return emb + layers + (2 * ln if cfg.final_norm and final else 0) + out


def test_reference_implementations_pass_every_hidden_case():
    for exercise_id in ("ch06.layer_norm", "ch06.count_parameters"):
        result = check(exercise_id, EXERCISES[exercise_id].reference)
        assert result.passed and result.n_passed == result.n_cases, result.summary()


def test_hand_written_layer_norm_passes_and_matches_nn_layer_norm():
    assert check("ch06.layer_norm", _layer_norm).passed
    ln = torch.nn.LayerNorm(8, eps=1e-3).double()
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
    x = torch.randn(3, 4, 8, dtype=torch.float64)
    torch.testing.assert_close(_layer_norm(x, ln.weight, ln.bias, ln.eps), ln(x))


def test_unbiased_variance_is_caught():
    result = check("ch06.layer_norm", lambda x, w, b, eps: _layer_norm(x, w, b, eps, unbiased=True))
    assert not result.passed
    assert any("C = 2" in m and "数值不对" in m for m in result.messages)


def test_eps_outside_the_square_root_is_caught():
    result = check("ch06.layer_norm", lambda x, w, b, eps: _layer_norm(x, w, b, eps, eps_outside=True))
    assert not result.passed
    assert any("eps = 0.5" in m for m in result.messages)


def test_forgetting_eps_gives_nan_on_a_constant_token():
    result = check("ch06.layer_norm", lambda x, w, b, eps: _layer_norm(x, w, b, 0.0))
    assert not result.passed
    assert any("方差为 0" in m and "NaN" in m for m in result.messages)


def test_normalising_over_the_batch_is_caught():
    result = check("ch06.layer_norm", lambda x, w, b, eps: _layer_norm(x, w, b, eps, dim=0))
    assert not result.passed and result.n_passed == 0


def test_formula_passes_and_gives_the_base_count():
    assert check("ch06.count_parameters", _count).passed
    assert _count(BASE) == 63_084_544


def test_reference_counts_tied_tensors_once():
    ref = EXERCISES["ch06.count_parameters"].reference
    for case in EXERCISES["ch06.count_parameters"].cases:
        cfg = case.args[0]
        assert ref(cfg) == count_parameters(Transformer(cfg)) == _count(cfg)


def test_common_counting_mistakes_are_caught():
    mistakes = {
        "漏掉注意力的偏置": dict(attn_bias=False),
        "漏掉 LayerNorm": dict(norms=False),
        "漏掉末尾 LayerNorm": dict(final=False),
        "绑定的输出层又算一遍": dict(double_tied=True),
        "不绑定时忘了输出层的偏置": dict(untied_bias=False),
    }
    for name, kwargs in mistakes.items():
        result = check("ch06.count_parameters", lambda cfg, kw=kwargs: _count(cfg, **kw))
        assert not result.passed, name
        assert all("数值不对" in m for m in result.messages), name


def test_off_by_one_is_not_tolerated():
    result = check("ch06.count_parameters", lambda cfg: _count(cfg) + 1)
    assert not result.passed and result.n_passed == 0
