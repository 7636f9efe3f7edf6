"""在浏览器里跑课程模型的小部件的 Python 一侧：打开时的视图、笔记本里回给前端的运行时与权重、输入的提示。"""
import numpy as np
import pytest

from tfcourse import webmodels
from tfcourse.widgets.live import ReviewAttention, input_notes
from tfcourse.widgets.heatmap import head_maps


def test_head_maps_put_the_average_first_and_a_mean_row_on_top():
    rng = np.random.default_rng(0)
    w = rng.random((4, 5, 5))
    w /= w.sum(-1, keepdims=True)
    labels, maps = head_maps(w)
    assert labels == ["4 个头平均", "第 1 头", "第 2 头", "第 3 头", "第 4 头"]
    assert all(m.shape == (6, 5) for m in maps)
    assert np.allclose(maps[0][1:], w.mean(0)) and np.allclose(maps[3][1:], w[2])
    assert all(np.allclose(m[0], m[1:].mean(0)) for m in maps)
    with pytest.raises(ValueError, match="H, T, T"):
        head_maps(w[0])


def test_review_attention_opens_on_the_float16_models_reading_of_the_text():
    text = "房间很干净，就是隔音太差"
    heat = ReviewAttention(text)
    clf, _ = webmodels.reference_model("cls-bert")
    att = clf.attention(text)
    assert heat.live_text == text and abs(heat.live_prob - att["p_positive"]) < 1e-9
    assert heat.map_k_tokens[0] == att["tokens"] and heat.map_q_tokens[0][0] == "（平均）"
    assert np.allclose(heat.weights[2][1:], att["weights"][1], atol=1e-6)     # 第 2 张图是第 1 头
    assert heat.selected == (0, None) and heat.map_index == 0 and heat.live_notes == []
    assert "function courseModel" in heat._esm                 # 拼进了把读者的文字交给模型的那一段


def test_review_attention_rejects_what_it_cannot_read():
    with pytest.raises(ValueError, match="非空"):
        ReviewAttention("")
    with pytest.raises(ValueError, match="cls-bert"):
        ReviewAttention("很好", model="gpt-zh")


def test_notes_say_where_the_text_was_cut_and_which_characters_are_unknown():
    known = lambda c: c in "好很差"                              # noqa: E731
    assert input_notes("很好", 5, known) == []
    notes = input_notes("很好差很好差", 4, known)
    assert notes == ["模型只读前 4 个字：从第 5 个字「好」起没有读。"]
    notes = input_notes("很好😀饕好abcdefgh", 20, known)
    assert notes == ["「😀」「饕」「a」「b」「c」「d」 等 10 个字不在字表里，模型看到的是 [UNK]。"]
    assert input_notes("饕" * 10, 3, known)[1] == "「饕」不在字表里，模型看到的是 [UNK]。"   # 截掉的部分不算


def test_the_notebook_side_answers_a_model_request_with_the_runtime_and_the_weights():
    heat = ReviewAttention("好")
    sent = []
    heat.send = lambda content, buffers=None: sent.append((content, buffers))
    heat._answer_model_request(heat, {"tfcourse_request": "model", "name": "cls-bert"}, [])
    (content, buffers), = sent
    assert content["tfcourse_model"] == "cls-bert" and "export function fromSafetensors" in content["runtime"]
    assert buffers == [webmodels.export("cls-bert")]
    heat._answer_model_request(heat, {"tfcourse_request": "model", "name": "gpt-xl"}, [])
    assert "gpt-xl" in sent[-1][0]["error"] and sent[-1][1] is None
    heat._answer_model_request(heat, {"other": 1}, [])           # 别的消息不理
    assert len(sent) == 2


def test_mask_filler_opens_on_chapter_twelves_fill():
    """打开时的候选 = 第 12 章 fill 的做法（[CLS] + 句子 + [SEP]，第 pos 个字换成 [MASK]）在 bert-zh 上的结果。"""
    import torch

    from tfcourse import checkpoints
    from tfcourse.bert import BertConfig, BertForMaskedLM
    from tfcourse.tokenize import CharVocab
    from tfcourse.widgets.live import MaskFiller

    state, meta = checkpoints.load("bert-zh")
    vocab = CharVocab.from_meta(meta["vocab"])
    state = {k: v.float() for k, v in state.items()}
    state["decoder.weight"] = state["bert.tok_emb.weight"]
    bert = BertForMaskedLM(BertConfig(**meta["config"])).eval()
    bert.load_state_dict(state)
    text, pos = "这家店的菜很好吃，服务也不错", 6
    ids = [vocab.id("[CLS]")] + vocab.encode(text) + [vocab.id("[SEP]")]
    ids[1 + pos] = vocab.id("[MASK]")
    with torch.no_grad():
        p = bert(torch.tensor([ids]))[0, 1 + pos].softmax(-1)
    top = p.topk(5)
    w = MaskFiller(text, pos)
    assert [c for c, _ in w.candidates] == [vocab.itos[i] for i in top.indices.tolist()]
    assert np.allclose([q for _, q in w.candidates], top.values.tolist(), atol=1e-5)
    rank = int((p > p[vocab.id("好")]).sum())
    assert w.original_rank == rank and abs(w.original_prob - float(p[vocab.id("好")])) < 1e-6
    assert w.live_notes == [] and w.position == pos and "function courseModel" in w._esm


def test_mask_filler_says_what_it_cannot_do():
    from tfcourse.widgets.live import MaskFiller, fill_candidates

    with pytest.raises(ValueError, match="非空"):
        MaskFiller("", 0)
    with pytest.raises(ValueError, match="0 到 1"):
        MaskFiller("你好", 2)
    top, p, rank = fill_candidates("饕很好", 0)
    assert rank == -1 and p == 0.0 and len(top) == 5                       # 原字不在字表里
    w = MaskFiller("好" * 130, 3)
    assert w.live_notes == ["模型只读前 126 个字：从第 127 个字「好」起没有读。"]
