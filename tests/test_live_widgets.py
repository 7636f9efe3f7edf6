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


def test_mulberry32_is_the_browsers_generator():
    """与 runtime.js 的 mulberry32 逐位相同（这几个数是 Node 里 Math.imul 那一版算的）。"""
    from tfcourse.widgets.live import mulberry32

    r = mulberry32(0)
    assert [round(r(), 6) for _ in range(3)] == [0.266429, 0.00033, 0.223272]
    a, b = mulberry32(7), mulberry32(7)
    seq = [a() for _ in range(1000)]
    assert seq == [b() for _ in range(1000)] and all(0 <= x < 1 for x in seq)
    assert abs(sum(seq) / len(seq) - 0.5) < 0.05                                 # 大致均匀


def test_greedy_generation_steps_equal_gpt_generate():
    import torch

    from tfcourse import control, gpt, webmodels
    from tfcourse.widgets.live import generation_steps

    model, vocab = webmodels.reference_model("gpt-zh")
    never = [vocab.unk_id] + [vocab.id(t) for t in control.CONTROL_TOKENS.values()]
    for prompt in ("这家酒店", "", "饕餮😀"):
        run = generation_steps("gpt-zh", prompt, n_new=16)
        ids = torch.tensor([[control.SEP] + vocab.encode(prompt)])
        ref = gpt.generate(model, ids, 16, temperature=0.0, suppress_ids=never)[0, ids.shape[1]:].tolist()
        assert run["ids"] == ref[:len(run["ids"])] and (run["ended"] or len(run["ids"]) == 16)
        assert run["prompt_ids"] == ids[0].tolist()
        for s in run["steps"]:
            probs = [p for _, p in s["top"]]
            assert s["rank"] == 0 and s["kept"] == 1 and probs == sorted(probs, reverse=True)
            assert not {i for i, _ in s["top"]} & set(never)                    # □ 与控制 token 从不候选


def test_guided_greedy_generation_steps_equal_gpt_generate():
    """第 15 章：带控制 token 和引导（γ = 3）的贪心续写，与 gpt.generate 的无分类器引导逐 token 相同（两边都用 KV 缓存）。"""
    import torch

    from tfcourse import control, gpt, webmodels
    from tfcourse.widgets.live import generation_steps

    model, vocab = webmodels.reference_model("gpt-zh-ctrl")
    never = [vocab.unk_id] + [vocab.id(t) for t in control.CONTROL_TOKENS.values()]
    for prompt, label in (("这家酒店", 0), ("房间", 1)):
        run = generation_steps("gpt-zh-ctrl", prompt, n_new=16, label=label, guidance=3.0)
        head = [control.SEP, vocab.id(control.CONTROL_TOKENS[label])]
        neg = [control.SEP, vocab.id(control.CONTROL_TOKENS[1 - label])] + vocab.encode(prompt)
        ids = torch.tensor([head + vocab.encode(prompt)])
        ref = gpt.generate(model, ids, 16, temperature=0.0, suppress_ids=never, guidance_scale=3.0,
                           negative_prompt_ids=torch.tensor([neg]))[0, ids.shape[1]:].tolist()
        assert run["prompt_ids"] == ids[0].tolist()
        assert run["ids"] == ref[:len(run["ids"])] and (run["ended"] or len(run["ids"]) == 16), (prompt, label)


def test_sampled_steps_keep_what_the_rules_keep_and_draw_from_it():
    from tfcourse.widgets.live import generation_steps

    a = generation_steps("gpt-zh", "这本书", temperature=1.2, top_k=8, seed=5)
    assert a == generation_steps("gpt-zh", "这本书", temperature=1.2, top_k=8, seed=5)   # 同一个种子，同样的字
    assert a["ids"] != generation_steps("gpt-zh", "这本书", temperature=1.2, top_k=8, seed=6)["ids"]
    assert all(8 <= s["kept"] and s["rank"] < s["kept"] for s in a["steps"])
    b = generation_steps("gpt-zh", "这本书", temperature=1.0, top_p=0.5, seed=1)
    assert all(s["rank"] < s["kept"] for s in b["steps"]) and any(s["kept"] > 1 for s in b["steps"])


def test_guided_generation_needs_the_control_model_and_a_label():
    from tfcourse.widgets.live import LiveGeneration, generation_steps

    with pytest.raises(ValueError, match="gpt-zh-ctrl"):
        generation_steps("gpt-zh", "好", label=1)
    with pytest.raises(ValueError, match="label"):
        generation_steps("gpt-zh-ctrl", "好", guidance=2.0)
    with pytest.raises(ValueError, match="LiveGeneration 只能用"):
        LiveGeneration("好", "bert-zh")
    with pytest.raises(ValueError, match="滑块的范围"):
        LiveGeneration("好", temperature=3.0)
    up = generation_steps("gpt-zh-ctrl", "这家店", label=1, guidance=3.0)
    down = generation_steps("gpt-zh-ctrl", "这家店", label=0, guidance=3.0)
    assert up["prompt_ids"][:2] != down["prompt_ids"][:2] and up["ids"] != down["ids"]


def test_live_generation_masks_what_it_shows_and_says_what_it_cut():
    from tfcourse.widgets.live import LiveGeneration

    w = LiveGeneration("好" * 60, n_new=24)
    assert w.live_notes[0].startswith("模型只读前 39 个字")                      # 64 − 24 − 1（⏎）
    assert len(w.prompt_tokens) == 39 and w.tokens and w.steps
    u = LiveGeneration("𠮷𪚥")
    assert u.prompt_tokens == ["□", "□"] and u.live_notes == ["「𠮷」「𪚥」不在字表里，模型看到的是 □。"]


def test_runtime_function_listing_is_the_whole_function():
    from tfcourse.webmodels import runtime_function

    src = runtime_function("multiHeadAttention")
    assert src.startswith("// ") and "export function multiHeadAttention(" in src and src.rstrip().endswith("}")
    assert src.count("{") == src.count("}")
    with pytest.raises(ValueError, match="nope"):
        runtime_function("nope")


def test_sentence_heads_are_bert_zh_reading_the_sentence():
    """第 4 章：SentenceHeads 打开时的每张图就是 bert-zh 编码器（浏览器那一份权重）读 [CLS] + 句子 + [SEP] 的注意力。"""
    import torch

    from tfcourse import webmodels
    from tfcourse.widgets.live import SentenceHeads, sentence_heads

    model, vocab = webmodels.reference_model("bert-zh")
    text = "我昨天在书店买了一本书"
    ids = [vocab.id("[CLS]")] + vocab.encode(text) + [vocab.id("[SEP]")]
    with torch.no_grad():
        model.bert(torch.tensor([ids]))
    ref = model.bert.attention_weights()[:, 0]                          # (L, H, T, T)
    att = sentence_heads(text)
    assert att["tokens"][0] == "[CLS]" and att["tokens"][-1] == "[SEP]" and len(att["tokens"]) == len(ids)
    assert np.allclose(att["weights"], ref.numpy(), atol=1e-6)
    w = SentenceHeads(text, map_index=3, selected=(2, None))
    L, H = ref.shape[:2]
    assert len(w.weights) == L * H and w.labels[3] == "第 1 层 · 第 4 头" and w.map_index == 3
    assert np.allclose(w.weights[5], ref[1, 1].numpy(), atol=1e-6) and w.selected == (2, None)
    assert SentenceHeads("好" * 130).live_notes == ["模型只读前 126 个字：从第 127 个字「好」起没有读。"]
    with pytest.raises(ValueError, match="非空"):
        SentenceHeads("")
