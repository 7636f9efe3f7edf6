import copy

import pytest
import torch
from torch import nn

from tfcourse.attention import MultiHeadAttention
from tfcourse.gpt import GPT, GPT_TINY
from tfcourse.layers import EncoderLayer
from tfcourse.lora import LoRALinear, add_lora, merge_lora, trainable_parameters

TARGETS = {"q_proj", "v_proj"}


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """小模型：1 个线程更快，也不随核数变。"""


def _gpt(seed=0):
    torch.manual_seed(seed)
    return GPT(GPT_TINY).eval()


def _ids(seed=1, B=3, T=12):
    return torch.randint(0, GPT_TINY.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))


def _randomise_B(model, seed=2):
    """训练过的适配器 B 不再是 0：随机填上，让各种等价性检查真的有东西可比。"""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, LoRALinear):
                m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=gen) * 0.1)
    return model


def _adapters(model):
    return [m for m in model.modules() if isinstance(m, LoRALinear)]


def test_fresh_adapter_changes_nothing_exactly():
    base = _gpt()
    ids = _ids()
    with torch.no_grad():
        before = base(ids)
        after = add_lora(copy.deepcopy(base), r=4, alpha=8, targets=TARGETS)(ids)
    assert torch.equal(before, after)
    layer = nn.Linear(5, 3)
    x = torch.randn(7, 5)
    assert torch.equal(LoRALinear(layer, 2, 1.0)(x), layer(x))


def test_lora_linear_formula_and_init():
    torch.manual_seed(0)
    base = nn.Linear(6, 4)
    lora = LoRALinear(base, r=3, alpha=6.0)
    assert lora.lora_A.shape == (3, 6) and lora.lora_B.shape == (4, 3)
    assert torch.all(lora.lora_B == 0) and lora.lora_A.abs().max() > 0
    bound = 1 / 6 ** 0.5                                           # kaiming-uniform(a=√5) 的界 = 1/√in
    assert lora.lora_A.abs().max() <= bound
    with torch.no_grad():
        lora.lora_B.normal_()
    x = torch.randn(2, 5, 6, dtype=torch.float32)
    want = base(x) + 2.0 * x @ lora.lora_A.T @ lora.lora_B.T
    torch.testing.assert_close(lora(x), want)
    assert lora.scaling == 2.0 and "r=3" in repr(lora)


def test_only_lora_parameters_require_grad():
    model = add_lora(_gpt(), r=2, alpha=4, targets=TARGETS)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all(n.endswith(("lora_A", "lora_B")) for n in names)
    assert len(names) == 2 * 2 * GPT_TINY.n_layers                 # 每层 q_proj、v_proj 各一对
    assert all(isinstance(m.self_attn.q_proj, LoRALinear) and isinstance(m.self_attn.v_proj, LoRALinear)
               and isinstance(m.self_attn.k_proj, nn.Linear) for m in model.layers)


@pytest.mark.parametrize("r", [1, 4, 16])
def test_trainable_counts(r):
    model = _gpt()
    _, total_before = trainable_parameters(model)
    add_lora(model, r=r, alpha=2 * r, targets=TARGETS)
    trainable, total = trainable_parameters(model)
    C = GPT_TINY.d_model
    expected = GPT_TINY.n_layers * 2 * r * (C + C)                 # 每个适配的层 r·(in + out)
    assert trainable == expected
    assert total == total_before + expected
    full = _gpt()
    assert trainable_parameters(full) == (total_before, total_before)   # 词向量与输出层共享，只数一次


@pytest.mark.numerics
def test_optimizer_steps_move_only_lora():
    model = add_lora(_gpt(), r=4, alpha=8, targets=TARGETS)
    model.train()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)   # 故意把全部参数交给优化器
    ids = _ids(B=4, T=16)
    for _ in range(3):
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert moved == {n for n in before if n.endswith(("lora_A", "lora_B"))}
    assert all(p.grad is None for n, p in model.named_parameters() if n not in moved)


def _copy_into_peft(ours, theirs):
    """把我们的 A、B 抄进 peft 的适配器（同名的模块路径：peft 在外面多包了 base_model.model）。"""
    mods = dict(theirs.named_modules())
    with torch.no_grad():
        for name, m in ours.named_modules():
            if isinstance(m, LoRALinear):
                peft_layer = mods["base_model.model." + name]
                peft_layer.lora_A["default"].weight.copy_(m.lora_A)
                peft_layer.lora_B["default"].weight.copy_(m.lora_B)
                assert peft_layer.scaling["default"] == m.scaling


@pytest.mark.numerics
def test_matches_peft_on_gpt():
    peft = pytest.importorskip("peft")
    base = _gpt()
    ours = _randomise_B(add_lora(copy.deepcopy(base), r=4, alpha=16, targets=TARGETS))
    cfg = peft.LoraConfig(r=4, lora_alpha=16, target_modules=sorted(TARGETS), lora_dropout=0.0)
    theirs = peft.get_peft_model(copy.deepcopy(base), cfg).eval()
    _copy_into_peft(ours, theirs)
    ids = _ids()
    with torch.no_grad():
        a, b = ours(ids), theirs(ids)
    assert (a - b).abs().max() <= 1e-5
    assert (a - base(ids)).abs().max() > 1e-2                      # 适配器确实改变了输出
    assert trainable_parameters(ours)[0] == sum(p.numel() for p in theirs.parameters() if p.requires_grad)


@pytest.mark.numerics
def test_matches_peft_on_encoder_stack():
    peft = pytest.importorskip("peft")
    torch.manual_seed(3)
    stack = nn.Sequential(*(EncoderLayer(16, 2, 32, dropout=0.0) for _ in range(2))).eval()
    targets = {"q_proj", "v_proj", "linear1"}
    ours = _randomise_B(add_lora(copy.deepcopy(stack), r=2, alpha=3, targets=targets), seed=5)
    cfg = peft.LoraConfig(r=2, lora_alpha=3, target_modules=sorted(targets), lora_dropout=0.0)
    theirs = peft.get_peft_model(copy.deepcopy(stack), cfg).eval()
    _copy_into_peft(ours, theirs)
    x = torch.randn(2, 7, 16)
    with torch.no_grad():
        assert (ours(x) - theirs(x)).abs().max() <= 1e-5


@pytest.mark.numerics
def test_merged_equals_unmerged():
    model = _randomise_B(add_lora(_gpt(), r=4, alpha=8, targets=TARGETS | {"out_proj", "linear2"}))
    ids = _ids()
    with torch.no_grad():
        unmerged = model(ids)
        emb = model.tok_emb.weight.clone()
        merged_model = merge_lora(model)
        merged = merged_model(ids)
    assert merged_model is model and not _adapters(model)
    assert all(type(m.self_attn.q_proj) is nn.Linear for m in model.layers)
    assert (merged - unmerged).abs().max() <= 1e-5
    assert torch.equal(model.tok_emb.weight, emb)
    assert trainable_parameters(model)[0] == 0


@pytest.mark.numerics
def test_merge_does_not_touch_tied_weights():
    model = _randomise_B(add_lora(_gpt(), r=2, alpha=2, targets={"lm_head"}))
    ids = _ids()
    emb = model.tok_emb.weight.detach().clone()
    with torch.no_grad():
        unmerged = model(ids)
        merge_lora(model)
        assert (model(ids) - unmerged).abs().max() <= 1e-5
    assert torch.equal(model.tok_emb.weight, emb)                  # 共享的词向量表没被改
    assert model.lm_head.weight is not model.tok_emb.weight


def test_merge_single_layer_and_shared_module():
    lin = nn.Linear(4, 4)
    lora = LoRALinear(lin, 2, 2.0)
    with torch.no_grad():
        lora.lora_B.fill_(0.5)
    x = torch.randn(3, 4)
    torch.testing.assert_close(merge_lora(lora)(x), lora(x))
    shared = nn.Linear(4, 4)
    model = nn.ModuleDict({"a": nn.Sequential(shared), "b": nn.Sequential(shared)})
    model["a"].proj = shared
    model["b"].proj = shared
    add_lora(model, 1, 1.0, {"proj"})
    assert model["a"].proj is model["b"].proj and isinstance(model["a"].proj, LoRALinear)


def test_bad_inputs():
    with pytest.raises(ValueError, match="秩 r"):
        LoRALinear(nn.Linear(3, 3), 0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        LoRALinear(nn.Linear(3, 3), 2, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        LoRALinear(nn.Linear(3, 3), 2, -1)
    with pytest.raises(ValueError, match="nn.Linear.*Conv1d"):
        LoRALinear(nn.Conv1d(3, 3, 1), 2, 1.0)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query_proj.*k_proj.*out_proj.*q_proj"):
        add_lora(mha, 2, 4, {"query_proj", "v_proj"})
    assert isinstance(mha.v_proj, nn.Linear) and type(mha.v_proj) is nn.Linear   # 出错时什么都没换
    assert all(p.requires_grad for p in mha.parameters())
    with pytest.raises(ValueError, match="秩 r"):
        add_lora(mha, 0, 4, TARGETS)
    with pytest.raises(ValueError, match="非空"):
        add_lora(mha, 2, 4, set())
    with pytest.raises(ValueError, match="没有 nn.Linear"):
        add_lora(nn.ReLU(), 2, 4, {"q_proj"})
    with pytest.raises(ValueError, match="nn.Module"):
        add_lora("gpt", 2, 4, TARGETS)
    add_lora(mha, 2, 4, "q_proj")                                  # 一个名字的字符串也行
    assert isinstance(mha.q_proj, LoRALinear) and type(mha.k_proj) is nn.Linear
