"""第 2 章的练习：从 X 与三个投影矩阵算自注意力；缩放后的打分矩阵。"""
from __future__ import annotations

import numpy as np

from .. import attention
from . import Case, Exercise, register

# 第 2 章手算用的例子：「猫 喝 水」，4 个特征依次是 名词、动词、有生命、能喝。
HAND_X = np.array([[1.0, 0.0, 1.0, 0.0],     # 猫
                   [0.0, 1.0, 0.0, 0.0],     # 喝
                   [1.0, 0.0, 0.0, 1.0]])    # 水
HAND_W_Q = np.array([[1.0, 0.0, 0.0, 0.0],
                     [0.0, 1.0, 2.0, 1.0],
                     [0.0, 0.0, 0.0, 1.0],
                     [0.0, 0.0, 0.0, 0.0]])
HAND_W_K = np.array([[0.0, 1.0, 0.0, 0.0],
                     [1.0, 0.0, 0.0, 0.0],
                     [0.0, 0.0, 1.0, 0.0],
                     [0.0, 0.0, 0.0, 1.0]])
HAND_W_V = np.eye(4)


def self_attention_reference(X, W_q, W_k, W_v):
    """参考实现：Q = X W_q，K = X W_k，V = X W_v，再做缩放点积注意力。返回 (输出 (T, d_v), 权重 (T, T))。"""
    X = np.asarray(X, dtype=np.float64)
    return attention.scaled_dot_product_attention_numpy(X @ W_q, X @ W_k, X @ W_v)


def attention_scores_reference(Q, K):
    """参考实现：缩放后的打分 Q Kᵀ / √d_k，形状 (T, S)。"""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    return Q @ K.T / np.sqrt(Q.shape[-1])


def _cases_self_attention() -> tuple[Case, ...]:
    gen = np.random.default_rng(2014)
    X6 = gen.normal(size=(5, 6))
    X8 = gen.normal(size=(7, 8))
    big = gen.normal(size=(4, 3)) * 30.0
    return (
        Case((HAND_X, HAND_W_Q, HAND_W_K, HAND_W_V), "正文手算的「猫 喝 水」"),
        Case((np.array([[0.5, -1.0, 2.0]]), *gen.normal(size=(3, 3, 2))), "只有 1 个词（T = 1）"),
        Case((X6, gen.normal(size=(6, 3)), gen.normal(size=(6, 3)), gen.normal(size=(6, 3))),
             "投影不是方阵：d_model = 6，d_k = 3（该除以 √3，不是 √6）"),
        Case((X6, gen.normal(size=(6, 3)), gen.normal(size=(6, 3)), gen.normal(size=(6, 2))),
             "W_v 的列数 d_v = 2 与 d_k = 3 不同"),
        Case((big, *gen.normal(size=(3, 3, 3))), "很大的输入：打分上千（朴素的 softmax 会溢出）"),
        Case((X8, *gen.normal(size=(3, 8, 8))), "随机的 7 个词、8 维"),
    )


def _cases_scores() -> tuple[Case, ...]:
    gen = np.random.default_rng(2017)
    return (
        Case((HAND_X @ HAND_W_Q, HAND_X @ HAND_W_K), "正文手算的 Q、K（3 × 4）"),
        Case((gen.normal(size=(2, 3)), gen.normal(size=(5, 3))), "查询 2 个、键 5 个（T ≠ S）"),
        Case((gen.normal(size=(1, 16)), gen.normal(size=(4, 16))), "只有 1 个查询，d_k = 16"),
        Case((gen.normal(size=(3, 1)), gen.normal(size=(3, 1))), "d_k = 1"),
        Case((gen.normal(size=(6, 9)), gen.normal(size=(6, 9))), "随机的 6 × 9"),
    )


def _generate_self_attention(rng: np.random.Generator) -> tuple[Case, ...]:
    """隐藏用例：T = 1、d_k ≠ d_model、d_v ≠ d_k、很大的输入、随机的方阵投影。"""
    def dims():
        return int(rng.integers(2, 8)), int(rng.integers(2, 9))      # T, d_model

    T, d = dims()
    d_k, d_v = int(rng.integers(1, d + 3)), int(rng.integers(1, 6))
    T2, d2 = dims()
    T3, d3 = dims()
    return (
        Case((rng.normal(size=(1, d)), *rng.normal(size=(3, d, d))), "只有 1 个词（T = 1）"),
        Case((rng.normal(size=(T, d)), rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k)),
              rng.normal(size=(d, d_k))), "投影不是方阵：d_k 与 d_model 不同"),
        Case((rng.normal(size=(T, d)), rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k)),
              rng.normal(size=(d, d_v))), "W_v 的列数 d_v 与 d_k 不同"),
        Case((rng.normal(size=(T2, d2)) * float(rng.uniform(20, 40)), *rng.normal(size=(3, d2, d2))),
             "很大的输入：打分上千（朴素的 softmax 会溢出）"),
        Case((rng.normal(size=(T3, d3)), *rng.normal(size=(3, d3, d3))), "随机的输入与方阵投影"),
    )


def _generate_scores(rng: np.random.Generator) -> tuple[Case, ...]:
    """隐藏用例：T ≠ S、只有 1 个查询、d_k = 1、随机。"""
    T, S, d = (int(x) for x in rng.integers(2, 9, size=3))
    return (
        Case((rng.normal(size=(T, d)), rng.normal(size=(S + 1, d))), "查询与键的个数不同（T ≠ S）"),
        Case((rng.normal(size=(1, d * 2)), rng.normal(size=(S, d * 2))), "只有 1 个查询"),
        Case((rng.normal(size=(T, 1)), rng.normal(size=(S, 1))), "d_k = 1"),
        Case((rng.normal(size=(T, d)) * 10, rng.normal(size=(T, d)) * 10), "随机的方阵打分，数值较大"),
    )


register("ch02.self_attention", Exercise(
    title="从 X 和 W_q、W_k、W_v 算出自注意力的输出与权重",
    reference=self_attention_reference,
    cases=_cases_self_attention(),
    generate=_generate_self_attention,
))
register("ch02.attention_scores", Exercise(
    title="缩放后的注意力打分 Q Kᵀ / √d_k",
    reference=attention_scores_reference,
    cases=_cases_scores(),
    generate=_generate_scores,
))
