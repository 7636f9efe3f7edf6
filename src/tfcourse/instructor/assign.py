"""tfcourse assign：把一章做成作业——学生版（去掉参考答案）、答案卷和 manifest.json。"""
from __future__ import annotations

import pathlib

from .chapters import Chapter, load_chapter, manifest, solved_notebook, student_notebook, write_json


def assign(chapter: str, out: pathlib.Path, book: pathlib.Path | None = None) -> Chapter:
    """写出 out/student/<章>.ipynb、out/solved/<章>.ipynb 和 out/manifest.json，返回读到的章节。"""
    ch = load_chapter(chapter, book)
    out = pathlib.Path(out)
    write_json(out / "student" / ch.filename, student_notebook(ch))
    write_json(out / "solved" / ch.filename, solved_notebook(ch))
    write_json(out / "manifest.json", manifest(ch))
    return ch
