"""导出给浏览器的模型（tfcourse.webmodels）：名字、形状、dtype、元数据里的源检查点 SHA-256，以及 torch 这一边的对照模型。"""
import hashlib
import json
import struct

import pytest
import torch

from tfcourse import checkpoints, webmodels
from tfcourse.gpt import load_gpt_zh


def _header(data: bytes) -> dict:
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n])


@pytest.fixture(scope="module")
def gpt_zh():
    return webmodels.export("gpt-zh")


def test_export_is_safetensors_with_every_weight_in_float16(gpt_zh):
    from safetensors.torch import load

    header = _header(gpt_zh)
    model, _ = load_gpt_zh()
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}   # 共享的输出层只存一份
    assert set(header) - {"__metadata__"} == set(state)
    assert all(header[k]["dtype"] == "F16" and header[k]["shape"] == list(v.shape) for k, v in state.items())
    back = load(gpt_zh)
    for k, v in state.items():
        assert torch.equal(back[k], v.to(torch.float16)), k
    assert len(gpt_zh) < 2_000_000                              # 目标：每个模型 ≤ 2 MB


def test_metadata_names_the_source_checkpoint_and_its_vocabulary(gpt_zh):
    meta = _header(gpt_zh)["__metadata__"]
    entry = checkpoints.manifest()["gpt-zh"]
    assert meta["source_sha256"] == entry["sha256"]
    assert hashlib.sha256((checkpoints.DIRECTORY / entry["file"]).read_bytes()).hexdigest() == meta["source_sha256"]
    model, vocab = load_gpt_zh()
    cfg = json.loads(meta["config"])
    assert cfg["vocab_size"] == model.config.vocab_size == len(vocab)
    assert (cfg["d_model"], cfg["n_heads"], cfg["n_layers"], cfg["max_len"]) == (
        model.config.d_model, model.config.n_heads, model.config.n_layers, model.config.max_len)
    v = json.loads(meta["vocab"])
    assert v["itos"] == list(vocab.itos) and v["unk_id"] == vocab.unk_id == 1 and v["itos"][1] == "□"
    assert meta["kind"] == "gpt" and meta["model"] == "gpt-zh"


def test_reference_model_uses_the_float16_weights_and_stays_close():
    ref, vocab = webmodels.reference_model("gpt-zh")
    orig, _ = load_gpt_zh()
    w = ref.state_dict()["layers.0.ffn.linear1.weight"]
    assert torch.equal(w, w.half().float())                     # 权重恰好是 float16 能表示的数
    assert ref.lm_head.weight.data_ptr() == ref.tok_emb.weight.data_ptr()   # 输出层仍与词向量表共享
    ids = torch.tensor([vocab.encode("这家店的菜很好吃，服务也不错")])
    with torch.no_grad():
        a, b = ref(ids)[0, -1], orig(ids)[0, -1]
    assert (a - b).abs().max() < 0.05 * b.abs().max()          # 舍入到 float16 只改变一点点


def test_write_all_writes_each_model_once(tmp_path):
    paths = webmodels.write_all(tmp_path)
    assert [p.name for p in paths] == [f"{n}.safetensors" for n in ("gpt-zh", "gpt-zh-ctrl", "gpt-zh-llama", "bert-zh", "cls-bert")]
    mtime = paths[0].stat().st_mtime_ns
    webmodels.write_all(tmp_path)
    assert paths[0].stat().st_mtime_ns == mtime                 # 内容没变不重写


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="gpt-zh"):
        webmodels.export("gpt-xl")


def test_export_is_reproducible_byte_for_byte(gpt_zh):
    assert webmodels.export("gpt-zh") == gpt_zh


def test_the_control_model_is_chapter_15s_full_fine_tune():
    from safetensors.torch import load

    from tfcourse import control

    data = webmodels.export("gpt-zh-ctrl")
    meta = _header(data)["__metadata__"]
    assert meta["source_sha256"] == checkpoints.manifest()["gpt-zh-ctrl"]["sha256"]
    full = control.load_fine_tuned("full")
    back = load(data)
    for k, v in full.state_dict().items():
        if k != "lm_head.weight":
            assert torch.equal(back[k], v.to(torch.float16)), k
    base = load(webmodels.export("gpt-zh"))
    assert not torch.equal(back["layers.0.ffn.linear1.weight"], base["layers.0.ffn.linear1.weight"])   # 确实微调过


@pytest.mark.parametrize("name", ["bert-zh", "cls-bert"])
def test_bert_exports_hold_every_weight_but_the_tied_output_layer(name):
    from safetensors.torch import load

    data = webmodels.export(name)
    meta = _header(data)["__metadata__"]
    assert meta["source_sha256"] == checkpoints.manifest()[name]["sha256"]
    assert meta["kind"] == {"bert-zh": "bert-mlm", "cls-bert": "bert-cls"}[name] and meta["model"] == name
    cfg = json.loads(meta["config"])
    assert cfg["eps"] == 1e-12 and cfg["norm_first"] is False and cfg["max_len"] == 128
    ref, vocab = webmodels.reference_model(name)
    model = ref.model if name == "cls-bert" else ref
    state = {k: v for k, v in model.state_dict().items() if k != "decoder.weight"}
    back = load(data)
    assert set(back) == set(state)                              # MLM 的预测头 / 分类头都在，共享的输出层只存一份
    for k, v in state.items():
        assert back[k].dtype == torch.float16 and torch.equal(back[k].float(), v), k
    assert json.loads(meta["vocab"])["itos"] == list(vocab.itos)
    assert len(data) < 2_000_000
    if name == "bert-zh":
        assert {"transform.weight", "transform_norm.bias", "decoder.bias"} <= set(back)
        assert ref.decoder.weight.data_ptr() == ref.bert.tok_emb.weight.data_ptr()
    else:
        assert {"head.weight", "head.bias"} <= set(back) and ref.model.pool == "mean"


def test_the_classifier_export_is_the_shipped_cls_bert():
    from tfcourse.classify import load_classifier

    ref, _ = webmodels.reference_model("cls-bert")
    shipped = load_classifier("cls-bert")
    texts = ["房间很干净，服务也好", "太差了，再也不来", "一般般吧"]
    assert abs(ref.predict_proba(texts) - shipped.predict_proba(texts)).max() < 0.02   # 只差 float16 的舍入
    assert (ref.predict(texts) == shipped.predict(texts)).all()


def test_write_site_writes_the_runtime_beside_the_models(tmp_path):
    paths = webmodels.write_site(tmp_path)
    assert paths[0] == tmp_path / "runtime.js" and paths[0].read_bytes() == webmodels.RUNTIME.read_bytes()
    assert [p.parent for p in paths[1:]] == [tmp_path / "models"] * len(webmodels.MODELS)
