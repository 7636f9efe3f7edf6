"""tfcourse.notebook：展示源码时略去输入校验与指定的方法，核对单元打印一行 ✓。"""
from __future__ import annotations

from tfcourse import attention
from tfcourse.notebook import ELIDED, ok, teaching_source


def _example(x, n):
    """示例。"""
    # ---- 输入检查 ----
    if n < 1:
        raise ValueError("n 应为正整数")
    for name in ("x",):
        if x is None:
            raise ValueError(name)
    y = x * n                      # 讲课的那一行
    return y


class _Example:
    def forward(self, x):
        return x + 1

    # 只为对照 torch 才有的方法
    def load_torch_weights(self, other):
        return other


def test_input_checks_fold_into_one_line_and_the_lesson_stays():
    src = teaching_source(_example)
    assert src.count(ELIDED) == 1
    assert "raise" not in src and "输入检查" not in src
    assert "y = x * n" in src and "return y" in src


def test_skipped_methods_disappear_with_their_comment():
    src = teaching_source(_Example, skip=("load_torch_weights",))
    assert "load_torch_weights" not in src and "只为对照" not in src
    assert "def forward" in src


def test_package_listing_keeps_the_attention_formula():
    src = teaching_source(attention.scaled_dot_product_attention)
    assert "softmax" in src and "raise" not in src and ELIDED in src


def test_ok_prints_one_check_line(capsys):
    ok("草稿 = 包")
    assert capsys.readouterr().out == "✓ 核对通过：草稿 = 包\n"
