import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from tfcourse import rnn
from tfcourse.widgets import AttentionHeatmap, RNNMemoryExplorer, format_state

# ---------- RNN 记忆探索器 ----------

def test_explorer_default_shows_chapter_one_value():
    e = RNNMemoryExplorer(w_hh=0.9, w_xh=0.5, length=20)
    assert (e.w_hh, e.w_xh, e.length) == (0.9, 0.5, 20)
    assert format_state(e.value) == "0.0493"


def test_explorer_grid_equals_rnn_module_everywhere():
    e = RNNMemoryExplorer(max_len=60)
    grid = np.asarray(e.curves).reshape(len(e.w_hh_values), len(e.w_xh_values), e.max_len)
    expected = rnn.memory_curves(e.w_hh_values, e.w_xh_values, e.max_len)
    np.testing.assert_allclose(grid, expected, rtol=1e-5, atol=1e-12)   # 6 位有效数字
    for w_hh, w_xh, L in [(0.0, 0.25, 1), (0.55, 1.75, 33), (1.5, 2.0, 60), (0.9, 0.5, 50)]:
        e.set(w_hh=w_hh, w_xh=w_xh, length=L)
        assert format_state(e.value) == format_state(rnn.final_hidden_state(L, w_hh, w_xh))


def test_explorer_clamps_at_slider_edges():
    e = RNNMemoryExplorer(max_len=100)
    e.length = 0
    assert e.length == 1
    e.length = 10_000
    assert e.length == 100
    e.w_hh_index = -5
    assert e.w_hh == e.w_hh_values[0]
    e.w_xh_index = 999
    assert e.w_xh == e.w_xh_values[-1]
    e.set(w_hh=7.0, w_xh=-3.0, length=-1)            # 越界的参数吸附到最近的网格点
    assert (e.w_hh, e.w_xh, e.length) == (e.w_hh_values[-1], e.w_xh_values[0], 1)


def test_explorer_bad_arguments():
    with pytest.raises(ValueError, match="length 应为整数"):
        RNNMemoryExplorer(length=2.5)
    with pytest.raises(ValueError, match="W_hh 应为实数"):
        RNNMemoryExplorer(w_hh="0.9")
    with pytest.raises(ValueError, match="attention_alpha"):
        RNNMemoryExplorer(attention_alpha=2)


def test_explorer_state_is_json_and_compact():
    e = RNNMemoryExplorer()
    state = json.dumps(e.get_state())
    assert len(state) < 400_000, f"小部件状态 {len(state)} 字节，会让页面过大"


def test_python_and_javascript_number_formats_agree(tmp_path):
    node = shutil.which("node")
    assert node, "需要 Node.js 来运行前端格式化函数（CI 机器自带）"
    values = [0.0, 1.0, 0.049338, 0.0021, 0.00099, 2.66e-5, 1.234567e-9, 0.26103, -0.5, 0.99995, 0.001]
    module = tmp_path / "rnn_explorer.mjs"
    module.write_text(RNNMemoryExplorer._esm, encoding="utf-8")
    script = f"import {{ formatState }} from {json.dumps(module.as_uri())};" \
             f"console.log(JSON.stringify({json.dumps(values)}.map(formatState)));"
    out = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [format_state(v) for v in values]


# ---------- 注意力热力图 ----------

W3 = np.array([[0.5, 0.3, 0.2], [0.168, 0.457, 0.374], [0.1, 0.2, 0.7]])


def test_heatmap_selection_round_trip():
    h = AttentionHeatmap(W3, ["我", "love", "猫"], selected=(1, 2))
    assert h.selected == (1, 2)
    assert h.selected_weight == pytest.approx(0.374)
    h.select(0)
    assert h.selected == (0, None) and h.selected_weight is None
    np.testing.assert_allclose(h.selected_row(), W3[0])


def test_heatmap_clamps_selection():
    h = AttentionHeatmap(W3, ["我", "love", "猫"])
    h.select(99, 99)
    assert h.selected == (2, 2)
    h.row = -7
    assert h.selected is None
    h.map_index = 5
    assert h.map_index == 0


def test_heatmap_accepts_torch_and_layers_by_heads():
    import torch

    w = torch.softmax(torch.randn(2, 3, 4, 4), dim=-1)             # (L, H, T, S)
    h = AttentionHeatmap(w, list("abcd"))
    assert len(h.weights) == 6 and h.labels[4] == "第 2 层 · 第 2 头"
    h.select(1, 3, map_index=4)
    assert h.selected_weight == pytest.approx(float(w[1, 1, 1, 3]), abs=1e-6)


def test_heatmap_bad_inputs():
    with pytest.raises(ValueError, match=r"\(T=3, S=3\).*2 个查询词"):
        AttentionHeatmap(W3, ["a", "b"])
    with pytest.raises(ValueError, match="实际形状为 \\(3,\\)"):
        AttentionHeatmap(np.ones(3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="NaN"):
        AttentionHeatmap(np.full((2, 2), np.nan), ["a", "b"])
    with pytest.raises(ValueError, match="labels 应有 2 个"):
        AttentionHeatmap(np.ones((2, 2, 2)), ["a", "b"], labels=["x"])


def test_heatmap_mask_view_marks_blocked_cells():
    import torch

    from tfcourse.attention import causal_mask
    h = AttentionHeatmap(np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None], list("甲乙丙"), mask=causal_mask(3))
    assert h.mask == [causal_mask(3).tolist()]
    assert h.is_masked(0, 2) and not h.is_masked(2, 0)
    multi = AttentionHeatmap(np.ones((2, 3, 3)) / 3, list("甲乙丙"), mask=torch.ones(1, 3, dtype=torch.bool))
    assert len(multi.mask) == 2 and not multi.is_masked(1, 2)                     # (1, S) 广播到 (M, T, S)
    with pytest.raises(ValueError, match="布尔数组"):
        AttentionHeatmap(W3, list("甲乙丙"), mask=np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"mask 的形状 \(2, 2\) 无法广播"):
        AttentionHeatmap(W3, list("甲乙丙"), mask=np.ones((2, 2), dtype=bool))


# ---------- 缩放探索器（第 3 章）与位置编码探索器（第 5 章） ----------

def test_scaling_explorer_shows_package_statistics():
    from tfcourse.attention import scaling_statistics
    from tfcourse.widgets import ScalingExplorer
    stats = scaling_statistics(d_values=(1, 16, 256), n_keys=8, n_samples=50)
    w = ScalingExplorer(d_k=200, stats=stats)                  # 按对数距离取最近的网格值
    r = w.readout()
    assert r["d_k"] == 256 and r["scaled"] is False
    assert r["grad_norm"] == pytest.approx(stats["grad_norm"][0, 2], abs=1e-6)
    assert w.set(d_k=1, scaled=True).readout()["max_weight"] == pytest.approx(stats["max_weight"][1, 0], abs=1e-6)
    w.d_index = 99
    assert w.d_index == 2                                      # 越界夹回
    with pytest.raises(ValueError, match="d_k 应为正整数"):
        w.set(d_k=0)
    with pytest.raises(ValueError, match="scaling_statistics"):
        ScalingExplorer(stats={"d_values": [1]})


def test_pe_explorer_values_come_from_the_package():
    from tfcourse.positional import sinusoidal_positional_encoding
    from tfcourse.widgets import PositionalEncodingExplorer
    w = PositionalEncodingExplorer(max_len=32, d_model=16, position=7, pair=2)
    pe = sinusoidal_positional_encoding(32, 16)
    assert w.values() == pytest.approx((pe[7, 4].item(), pe[7, 5].item()), abs=1e-6)
    assert w.dots[5] == pytest.approx(float(pe[0] @ pe[5]), abs=1e-4)
    assert w.wavelength == pytest.approx(2 * np.pi * 10000 ** (4 / 16))
    w.set(position=500, pair=-3)
    assert (w.position, w.pair) == (31, 0)
    with pytest.raises(ValueError, match="position 应为整数"):
        w.set(position=1.5)
    with pytest.raises(ValueError, match="偶数"):
        PositionalEncodingExplorer(d_model=7)
    assert len(json.dumps(PositionalEncodingExplorer().get_state())) < 200_000


# ---------- 架构全景图（第 6、9 章） ----------

def _tiny_blocks(**changes):
    import torch

    from tfcourse.anatomy import model_blocks
    from tfcourse.model import TINY, Transformer
    torch.manual_seed(0)
    return model_blocks(Transformer(TINY.replace(**changes)), torch.randint(1, 16, (2, 9)), torch.randint(1, 16, (2, 5)))


def test_architecture_map_select_round_trip_and_total():
    from tfcourse.model import TINY, Transformer, count_parameters
    from tfcourse.widgets import ArchitectureMap
    blocks = _tiny_blocks()
    w = ArchitectureMap(blocks, title="TINY", selected="enc.ffn")
    assert w.total_params == count_parameters(Transformer(TINY)) == 43_904
    assert w.selected == "enc.ffn" and w.selected_block["params"] == 4_192
    assert w.selected_block == next(b for b in blocks if b["id"] == "enc.ffn")
    assert w.select("dec.cross_attn").selected_block["shape"] == "(B=2, T=5, C=32)"
    w.select(None)
    assert w.selected == "" and w.selected_block is None
    assert w.ids == [b["id"] for b in blocks]


def test_architecture_map_rejects_unknown_ids_and_bad_blocks():
    from tfcourse.widgets import ArchitectureMap
    blocks = _tiny_blocks()
    w = ArchitectureMap(blocks, selected="generator")
    with pytest.raises(ValueError, match=r"没有 id 为 'dec\.norm4' 的方块.*dec\.norm3"):
        w.select("dec.norm4")
    with pytest.raises(ValueError, match="没有 id 为 'ffn'"):
        w.selected = "ffn"                                     # 直接赋值也检查
    assert w.selected == "generator"                           # 出错后选择不变
    with pytest.raises(ValueError, match="没有 id"):
        ArchitectureMap(blocks, selected="encoder")
    with pytest.raises(ValueError, match="block_id 应为字符串"):
        w.select(3)
    with pytest.raises(ValueError, match="model_blocks"):
        from tfcourse.model import TINY, Transformer
        ArchitectureMap(Transformer(TINY))
    with pytest.raises(ValueError, match="非空"):
        ArchitectureMap([])
    with pytest.raises(ValueError, match="缺少字段"):
        ArchitectureMap([{"id": "x"}])
    bad = [dict(b) for b in blocks]
    bad[2]["total_params"] += 1
    with pytest.raises(ValueError, match="不等于 params × repeat"):
        ArchitectureMap(bad)
    with pytest.raises(ValueError, match="id 重复"):
        ArchitectureMap(blocks + blocks[:1])


def test_architecture_map_state_is_json_and_follows_new_blocks():
    from tfcourse.anatomy import model_blocks
    from tfcourse.model import BASE, Transformer
    from tfcourse.widgets import ArchitectureMap
    blocks = _tiny_blocks()
    blocks[4] = {**blocks[4], "params": np.int64(4192), "total_params": np.int64(8384)}   # numpy 整数整理成 int
    w = ArchitectureMap(blocks, selected="dec.final_norm")
    state = json.loads(json.dumps(w.get_state()))
    assert state["selected"] == "dec.final_norm" and state["total_params"] == 43_904
    assert [b["id"] for b in state["blocks"]] == w.ids and type(w.blocks[4]["params"]) is int
    assert len(json.dumps(state["blocks"])) < 20_000           # 18 个方块，几 KB
    w.blocks = _tiny_blocks(final_norm=False)                  # 新的方块里没有原来选中的那个：取消选择
    assert w.selected == "" and w.total_params == 43_904 - 2 * 64
    w.blocks = model_blocks(Transformer(BASE.replace(n_layers=1)))
    assert w.total_params == 18_944_000 + 2 * 1_024 + 3_152_384 + 4_204_032


# ---------- 注意力游乐场 ----------

LOVE_KEYS = [[1.0, 0.0], [0.0, 1.0], [0.8, 0.8]]          # 第 1 章「我 love 猫」的手编向量


def test_playground_opens_on_chapter_one_numbers():
    from tfcourse.attention import simple_attention, softmax
    from tfcourse.widgets import AttentionPlayground
    w = AttentionPlayground(LOVE_KEYS, ["我", "love", "猫"], query=(0.0, 1.0))
    assert w.query == [0.0, 1.0]
    np.testing.assert_allclose(w.scores, [0.0, 1.0, 0.8])
    np.testing.assert_allclose(w.weights, [0.168, 0.457, 0.374], atol=5e-4)
    np.testing.assert_allclose(w.weights, softmax(w.scores))
    out, weights, _ = simple_attention(query=np.array([0.0, 1.0]), keys=np.array(LOVE_KEYS))
    np.testing.assert_allclose(w.output, out)
    assert w.output.shape == (2,) and abs(w.weights.sum() - 1) < 1e-12


def test_playground_values_and_query_follow_the_package():
    from tfcourse.attention import simple_attention
    from tfcourse.widgets import AttentionPlayground
    values = [[1.0, 2.0], [-1.0, 0.5], [0.0, -3.0]]
    w = AttentionPlayground(LOVE_KEYS, list("甲乙丙"), values, query=(0.3, -0.7))
    out, weights, scores = simple_attention(query=np.array([0.3, -0.7]), keys=np.array(LOVE_KEYS), values=np.array(values))
    np.testing.assert_allclose(w.scores, scores)
    np.testing.assert_allclose(w.output, out)
    assert w.value_vectors == values and w.key_vectors == LOVE_KEYS
    state = json.loads(json.dumps({k: v for k, v in w.get_state().items() if not k.startswith("_")}))
    assert state["query"] == [0.3, -0.7] and state["tokens"] == ["甲", "乙", "丙"]


def test_playground_clamps_the_query():
    from tfcourse.widgets import AttentionPlayground
    w = AttentionPlayground(LOVE_KEYS, ["我", "love", "猫"], limit=1.5)
    assert w.set_query(9, -9).query == [1.5, -1.5]
    w.query = [-2.0, 0.25]                                  # 从前端同步回来的值也夹回范围
    assert w.query == [-1.5, 0.25]
    assert AttentionPlayground(LOVE_KEYS, ["我", "love", "猫"], query=(3, 3), limit=2).query == [2.0, 2.0]


@pytest.mark.parametrize("kwargs, message", [
    (dict(keys=[[1, 2, 3]], tokens=["甲"]), "(N, 2)"),
    (dict(keys=[1, 2], tokens=["甲"]), "2 维"),
    (dict(keys=[[1, 0]], tokens=["甲", "乙"]), "个数应相同"),
    (dict(keys=[[1, 0]], tokens=["甲"], values=[[1, 0], [0, 1]]), "个数应相同"),
    (dict(keys=[[np.nan, 0]], tokens=["甲"]), "NaN"),
    (dict(keys=[["a", 0]], tokens=["甲"]), "数值数组"),
    (dict(keys=[[1, 0]], tokens=["甲"], query=(1,)), "两个数"),
    (dict(keys=[[1, 0]], tokens=["甲"], query=("x", 0)), "实数"),
    (dict(keys=[[1, 0]], tokens=["甲"], limit=0), "step"),
    (dict(keys=[[1, 0]], tokens=["甲"], step=2, limit=1), "step"),
])
def test_playground_bad_inputs_raise_chinese_errors(kwargs, message):
    from tfcourse.widgets import AttentionPlayground
    with pytest.raises(ValueError, match=re.escape(message)):
        AttentionPlayground(**kwargs)


def test_playground_rejects_non_finite_query():
    from tfcourse.widgets import AttentionPlayground
    w = AttentionPlayground(LOVE_KEYS, ["我", "love", "猫"])
    with pytest.raises(ValueError, match="有限实数"):
        w.set_query(float("inf"), 0)
    with pytest.raises(ValueError, match="两个数"):
        w.query = [1.0]
    assert w.query == [0.0, 1.0]                          # 出错时保持原值


def test_heatmap_with_tokens_per_map():
    # 第 14 章：几条长短不一的评论各一张图，每张图有自己的词
    a = np.full((3, 3), 1 / 3)
    b = np.eye(2)
    h = AttentionHeatmap([a, b], [list("好不错"), ["[CLS]", "差"]], labels=["评论 1", "评论 2"], selected=(2, 1))
    assert h.map_q_tokens == [list("好不错"), ["[CLS]", "差"]] and h.map_k_tokens == h.map_q_tokens
    assert h.current_tokens() == (list("好不错"), list("好不错"))
    assert h.selected == (2, 1) and abs(h.selected_weight - 1 / 3) < 1e-6
    h.map_index = 1                                  # 第二张图只有 2 行：原来的第 3 行不在图里了
    assert h.selected is None and h.current_tokens()[0] == ["[CLS]", "差"]
    h.select(0, 1)
    assert h.selected_weight == 0.0 and list(h.selected_row()) == [1.0, 0.0]
    h.row = 9                                        # 夹回这张图的范围
    assert h.row == 1
    with pytest.raises(ValueError, match="第 2 张图的权重形状应为"):
        AttentionHeatmap([a, np.eye(3)], [list("好不错"), ["a", "b"]])
    with pytest.raises(ValueError, match="每张图一组词"):
        AttentionHeatmap([a], [list("好不错"), ["a", "b"]])
    plain = AttentionHeatmap(a, list("好不错"))       # 原来的用法不变
    assert plain.map_q_tokens == [] and plain.current_tokens()[0] == list("好不错")


def test_heatmap_with_tokens_and_mask_per_map():
    # 第 11 章：三种预训练范式各有自己的输入 token 和掩码，轴上标的是 token 而不是 1…T
    full = np.ones((3, 3), dtype=bool)
    causal = np.tril(full)
    weights = [full / 3, causal / causal.sum(-1, keepdims=True)]
    tokens = [["[MASK]", "好", "吃"], ["<bos>", "好", "吃"]]
    h = AttentionHeatmap(weights, tokens, labels=["双向", "因果"], mask=[full, causal])
    assert h.map_q_tokens == tokens and h.current_tokens() == (tokens[0], tokens[0])
    assert h.mask == [full.tolist(), causal.tolist()]
    assert not h.is_masked(0, 2)
    h.map_index = 1
    assert h.is_masked(0, 2) and not h.is_masked(2, 0)
    assert h.current_tokens()[1] == ["<bos>", "好", "吃"]
    # 每张图的掩码可以广播：一行 (1, S) 表示每个查询都一样
    row = AttentionHeatmap([full / 3], [tokens[0]], mask=[np.array([[True, True, False]])])
    assert row.mask == [[[True, True, False]] * 3]
    with pytest.raises(ValueError, match="mask 应是 2 个布尔数组"):
        AttentionHeatmap(weights, tokens, mask=[full])
    with pytest.raises(ValueError, match="第 2 张图的 mask 形状"):
        AttentionHeatmap(weights, tokens, mask=[full, np.ones((2, 2), dtype=bool)])
    with pytest.raises(ValueError, match="布尔数组"):
        AttentionHeatmap(weights, tokens, mask=[full, causal.astype(int)])
