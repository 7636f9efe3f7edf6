"""知识地图：数据从仓库读出（目录、笔记本标题、import、模块文档字符串），随包附带的那份与仓库一致；
小部件把越界的章号夹回范围，坏输入给出中文 ValueError。"""
import json
import pathlib
import sys

import pytest

from tfcourse.widgets import KnowledgeMap
from tfcourse.widgets.knowledge_map import (SHIPPED, build_knowledge_map, load_knowledge_map, module_info,
                                            notebook_package_imports, read_toc)

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import imports  # noqa: E402


@pytest.fixture(scope="module")
def atlas():
    return build_knowledge_map(ROOT)


def test_shipped_map_matches_the_repository(atlas):
    """改了目录、章节标题、import 或模块说明之后，要重新生成：python -m tfcourse.widgets.knowledge_map"""
    assert json.loads(SHIPPED.read_text(encoding="utf-8")) == json.loads(json.dumps(atlas))


def test_chapters_come_from_the_toc_in_order(atlas):
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for p in toc["parts"] for c in p["chapters"] if "/ch" in c["file"]]
    assert read_toc(ROOT / "_toc.yml")["parts"][0]["caption"] == toc["parts"][0]["caption"]
    assert len(atlas["chapters"]) == len(files)
    numbers = [c["number"] for c in atlas["chapters"]]
    assert numbers == sorted(numbers) and numbers[0] == 1
    for c, f in zip(atlas["chapters"], files):
        # 链接相对第 16 章那一页：同一篇里是文件名，别的篇是 ../pN-xxx/文件名
        page = (ROOT / "book/p4-practice" / c["url"]).resolve()
        assert page == (ROOT / f"{f}.html").resolve(), c["url"]
        assert c["title"] and c["sections"], c["number"]
        assert not any(s.startswith(("路标", "练习", "小结")) for s in c["sections"])
    assert [n for p in atlas["parts"] for n in p["chapters"]] == numbers


def test_chapter_modules_agree_with_tools_imports(atlas):
    """章节用到的模块 = tools/imports.py 从同一本笔记本里找到的课程包模块（只算真是模块的那些）。"""
    import ast

    for c in atlas["chapters"]:
        nb = next(p for p in ROOT.glob("book/p*/ch*.ipynb") if p.stem == c["url"].split("/")[-1][:-5])
        found = imports._imports(ast.parse(imports._code_of_notebook(nb)), "__main__", False)
        modules = {m for m in found if m.startswith("tfcourse.") and imports._module_file(m) is not None}
        mine = {m["name"] for m in c["modules"]}
        # tools 还把 `from tfcourse.data import numerals` 里的包 tfcourse.data 算一个；地图只记子模块
        extra = {m for m in modules - mine if imports._module_file(m).name == "__init__.py"
                 and any(x.startswith(m + ".") for x in mine)}
        assert mine == modules - extra, c["number"]


def test_module_info_reads_the_introducing_chapter():
    info = module_info(ROOT / "src")
    assert info["tfcourse.gpt"]["introduced"] == 13 and info["tfcourse.bert"]["introduced"] == 12
    assert info["tfcourse.widgets.knowledge_map"]["introduced"] == 16
    assert all(not name.split(".")[-1].startswith("_") for name in info)


def test_imports_of_a_small_notebook(tmp_path):
    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "source": "from tfcourse import start_chapter, sampling\n"
                                                       "from tfcourse.gpt import GPT, generate\n%time x = 1\n"},
        {"cell_type": "code", "metadata": {"tags": ["colab-setup"]}, "source": "import tfcourse.bert\n"},
        {"cell_type": "markdown", "metadata": {}, "source": "from tfcourse.rnn import x"},
    ]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert notebook_package_imports(path, ROOT / "src") == {"tfcourse.gpt": ["GPT", "generate"],
                                                            "tfcourse.sampling": []}


def test_widget_clamps_and_reports(atlas):
    w = KnowledgeMap(atlas)
    assert w.selected == w.numbers[-1]                       # 默认打开最后一章
    assert w.select(999).selected == w.numbers[-1] and w.select(-5).selected == w.numbers[0]
    assert w.select(3).selected_chapter["title"].startswith("缩放点积")
    w.highlight("tfcourse.gpt")
    assert w.module == "tfcourse.gpt" and 13 in w.chapters_using("tfcourse.gpt")
    assert 1 not in w.chapters_using("tfcourse.gpt")
    w.highlight("")
    assert w.module == ""
    state = w.get_state()
    assert state["selected"] == 3 and len(state["chapters"]) == len(atlas["chapters"])


def test_bad_input_gives_chinese_errors(atlas, tmp_path):
    w = KnowledgeMap(atlas)
    with pytest.raises(ValueError, match="地图上没有模块"):
        w.highlight("tfcourse.nope")
    with pytest.raises(ValueError, match="章号应为整数"):
        w.select("3")
    with pytest.raises(ValueError, match="parts、chapters、modules"):
        KnowledgeMap({"chapters": []})
    with pytest.raises(ValueError, match="_toc.yml"):
        build_knowledge_map(tmp_path)


def test_load_uses_the_shipped_copy_outside_the_repository(tmp_path, atlas):
    assert load_knowledge_map(tmp_path) == json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert load_knowledge_map(ROOT) == atlas
