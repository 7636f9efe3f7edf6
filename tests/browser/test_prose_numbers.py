"""正文里说出的数字都是真的：每章 Markdown 里的小数、百分数与科学计数法数字，必须出现在本章这次构建
执行出的代码与输出里，或者列在笔记本元数据 tfcourse.constants 里（文献常数，注明出处）。

对照的是网站这次构建所用的执行结果：从 jupyter-cache（_build/.jupyter_cache）里取出与笔记本当前内容
匹配的那次执行的输出（nbval 执行、网站复用的就是它）。规则见 tools/prose_numbers.py。
"""
from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT, SITE, chapter_pages

sys.path.insert(0, str(ROOT / "tools"))
import prose_numbers  # noqa: E402

CACHE = SITE.parent / ".jupyter_cache"


def _executed(page: str) -> dict:
    import nbformat
    from jupyter_cache import get_cache

    if not CACHE.exists():
        pytest.fail(f"没有找到执行缓存 {CACHE}：先运行 make book。")
    nb = nbformat.read(ROOT / page.replace(".html", ".ipynb"), as_version=4)
    try:
        _, merged = get_cache(str(CACHE)).merge_match_into_notebook(nb)
    except KeyError:
        pytest.fail(f"执行缓存里没有与 {page} 当前内容匹配的执行结果：先运行 make book。")
    return merged


@pytest.mark.parametrize("page", chapter_pages())
def test_every_number_the_prose_states_is_printed_by_the_chapter(page):
    problems = prose_numbers.unchecked(_executed(page))
    assert not problems, f"{page}：正文里有 {len(problems)} 个数字不在本章的输出里：\n" + "\n".join(
        f"  单元 {i}：{num!r} —— …{ctx}…" for i, num, ctx in problems)


@pytest.mark.parametrize("page", chapter_pages())
def test_constants_name_their_source(page):
    nb = json.loads((ROOT / page.replace(".html", ".ipynb")).read_text(encoding="utf-8"))
    for c in nb.get("metadata", {}).get("tfcourse", {}).get("constants", []):
        assert str(c.get("value", "")).strip() and len(str(c.get("source", ""))) >= 4, c


def test_the_checker_catches_a_number_no_cell_prints():
    nb = {"metadata": {}, "cells": [
        {"cell_type": "code", "source": "print(0.457)", "outputs": [{"text": "0.457\n"}]},
        {"cell_type": "markdown", "source": "权重是 0.457，占 26.1%，误差 6.0e-08。"},
    ]}
    assert [n for _, n, _ in prose_numbers.unchecked(nb)] == ["26.1%", "6.0e-08"]
    nb["cells"][0]["outputs"][0]["text"] = "0.457 0.2610 6.0e-08\n"
    assert prose_numbers.unchecked(nb) == []
