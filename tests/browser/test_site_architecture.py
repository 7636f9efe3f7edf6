"""架构篇第 6–10 章的网页：在无头 Chromium 里操作结构图与热力图，显示的数字要和包里算出来的一致。"""
from __future__ import annotations

import re

import pytest

from conftest import chapter_page as _page, row_weights as _row_weights

ARCHMAP = ".tfc-archmap [data-testid=am-total]"


def _click_block(amap, block_id):
    amap.locator(f'button[data-block="{block_id}"]').click()
    detail = amap.locator("[data-testid=am-detail]")
    return {k: detail.locator(f"[data-testid=am-{k}]").inner_text() for k in ("label", "params", "share")} | {
        "shape": detail.locator("[data-testid=am-shape]").all_inner_texts()}


# ---------- 第 6 章：论文 base 模型的结构图 ----------

def test_base_model_map_counts_parameters_like_the_package(visit):
    from tfcourse.model import BASE, Transformer, count_parameters
    import torch

    with torch.device("meta"):
        model = Transformer(BASE)
    ffn = model.encoder.layers[0].ffn
    v = visit(_page(6), wait_for=ARCHMAP)
    amap = v.page.locator(".tfc-archmap").first
    total = count_parameters(model)
    assert amap.locator("[data-testid=am-total]").inner_text() == f"{total:,}" == "63,084,544"
    got = _click_block(amap, "enc.ffn")
    n = count_parameters(ffn)
    assert got["params"] == f"每层 {n:,} × 6 = {6 * n:,}" == "每层 2,099,712 × 6 = 12,598,272"
    assert got["share"] == f"占全部 {6 * n / total * 100:.1f}%"
    got = _click_block(amap, "dec.cross_attn")
    assert got["params"] == "每层 1,050,624 × 6 = 6,303,744" and "交叉注意力" in got["label"]
    got = _click_block(amap, "generator")
    assert got["params"] == "0"                                    # 与目标词嵌入共用权重
    assert amap.locator("button.selected").count() == 1
    v.assert_clean()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_architecture_map_is_readable_in_both_themes(visit, scheme):
    from test_site import _CONTRAST_JS

    v = visit(_page(6), color_scheme=scheme, wait_for=ARCHMAP)
    amap = v.page.locator(".tfc-archmap").first
    _click_block(amap, "enc.self_attn")
    selectors = [f".am-kind-{k} .am-label" for k in ("embed", "pos", "attn", "norm", "ffn", "linear", "softmax")]
    selectors += [".am-detail", ".am-detail code", ".am-io", ".am-repeat", ".tfc-title"]
    ratios = amap.evaluate(_CONTRAST_JS, selectors)
    low = {k: round(r, 2) for k, r in ratios.items() if r is None or r < 4.5}
    assert low == {}, f"{scheme} 主题下对比度不足 4.5:1 的元素：{low}"
    v.assert_clean()


# ---------- 第 9 章：读者自己的小模型，形状沿数据流追踪 ----------

def test_data_flow_map_shows_traced_shapes(visit):
    v = visit(_page(9), wait_for=ARCHMAP)
    amap = v.page.locator(".tfc-archmap").first
    # 笔记本里断言过：B=2，S=9，T=7，C=32，V=18，两层
    assert _click_block(amap, "enc.self_attn")["shape"] == ["(B=2, S=9, C=32)"]
    assert _click_block(amap, "dec.cross_attn")["shape"] == ["(B=2, T=7, C=32)"]
    got = _click_block(amap, "generator")
    assert got["shape"] == ["(B=2, T=7, V=18)"] and got["params"] == "0"
    shapes = amap.locator(".am-shape").all_inner_texts()
    assert len(shapes) >= 16 and all(re.fullmatch(r"\(B=2, [ST]=\d, [CV]=\d+\)", s) for s in shapes), shapes
    v.assert_clean()


# ---------- 第 7 章：编码器自注意力，填充位置画 × ----------

def test_encoder_heatmap_blocks_padding_columns(visit):
    sel = '.tfc-heatmap:has(.tfc-title:has-text("数数的编码器"))'
    v = visit(_page(7), wait_for=sel)
    heat = v.page.locator(sel).first
    tokens = heat.locator("th.tfc-rowhead").all_inner_texts()
    pads = [i for i, t in enumerate(tokens) if t.endswith(":·")]         # 笔记本把填充位置写成 "9:·"
    assert pads and pads == list(range(pads[0], len(tokens)))        # 右侧补齐
    select = heat.locator("select.tfc-map-select")
    n_maps = select.locator("option").count()
    assert n_maps >= 2
    for m in range(n_maps):
        select.select_option(str(m))
        assert heat.locator("td.tfc-masked").count() == len(tokens) * len(pads)
        row = _row_weights(heat, 1)
        assert abs(sum(row) - 1) < 0.02 and all(row[j] == 0 for j in pads)
    heat.locator(f'td[data-row="1"][data-col="{pads[0]}"]').click()
    assert float(heat.locator("[data-testid=selected-weight]").inner_text()) == 0.0
    assert "被掩码屏蔽" in heat.locator("[data-testid=selection]").inner_text()
    v.assert_clean()


# ---------- 第 8 章：交叉注意力对齐到镜像位置；掩码自注意力的因果 × ----------

def test_decoder_heatmaps_show_mirror_alignment_and_causal_mask(visit):
    sel = '.tfc-heatmap:has(.tfc-title:has-text("交叉注意力"))'
    v = visit(_page(8), wait_for=sel)
    cross = v.page.locator(sel).first
    select = cross.locator("select.tfc-map-select")
    n_src = cross.locator('thead th[scope="col"]').count()             # 源句子的位置数
    assert n_src == 8
    hits = total = 0
    for m in range(select.locator("option").count()):
        select.select_option(str(m))
        for i in range(n_src):                                   # 不看写 <eos> 的最后一行
            row = _row_weights(cross, i)
            assert abs(sum(row) - 1) < 0.02
            hits += max(range(len(row)), key=row.__getitem__) == n_src - 1 - i
            total += 1
    assert hits / total > 0.6, f"交叉注意力落在镜像位置的比例只有 {hits}/{total}"
    causal = v.page.locator('.tfc-heatmap:has(.tfc-title:has-text("掩码自注意力"))').first
    T = causal.locator("th.tfc-rowhead").count()
    assert causal.locator("td.tfc-masked").count() == T * (T - 1) // 2
    row = _row_weights(causal, 3)
    assert all(w == 0 for w in row[4:]) and abs(sum(row) - 1) < 0.02
    v.assert_clean()


# ---------- 第 10 章：训练好的数字翻译模型，交叉注意力对齐到数字 ----------

def test_numeral_cross_attention_aligns_characters_with_digits(visit):
    from tfcourse.data.numerals import to_chinese_reading

    sel = '.tfc-heatmap:has(.tfc-title:has-text("10086"))'
    v = visit(_page(10), wait_for=sel)
    heat = v.page.locator(sel).first
    rows = heat.locator("th.tfc-rowhead").all_inner_texts()
    chars = [r[2] for r in rows if r.startswith("写「")]
    assert "".join(chars) == to_chinese_reading(10086) == "一万零八十六"    # 行就是模型自己写出的读法
    cols = heat.locator('thead th[scope="col"]').all_inner_texts()
    assert cols == ["0:1", "1:0", "2:0", "3:8", "4:6"]
    # 页面打开时显示的就是笔记本挑出的那个头（它断言过：写一、八、六时分别看第 0、3、4 位）
    for ch, col in (("一", 0), ("八", 3), ("六", 4)):
        row = _row_weights(heat, rows.index(f"写「{ch}」"))
        assert abs(sum(row) - 1) < 0.02
        assert max(range(len(row)), key=row.__getitem__) == col, (ch, row)
    heat.locator(f'td[data-row="{rows.index("写「八」")}"][data-col="3"]').click()
    weight = float(heat.locator("[data-testid=selected-weight]").inner_text())
    assert "八" in heat.locator("[data-testid=selection]").inner_text()
    assert weight == max(_row_weights(heat, rows.index("写「八」")))      # 点到的格子就是这一行最大的那个
    v.assert_clean()
