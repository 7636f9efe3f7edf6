"""学生版网站：用去掉参考答案的笔记本构建，网页和可下载的源文件里都不许出现参考答案。

  python tools/student_book.py prepare _build/student [--chapters ch01,ch03] [--no-execute]
      在 _build/student/ 里摆好一份书的源文件：配置、目录、前言、扩展与静态文件照抄，
      每章的笔记本换成 tfcourse assign 生成的学生版（--chapters 只放这几章，--no-execute 不执行笔记本）。
  python tools/student_book.py scan _build/student/_build/html
      检查网站（网页、_sources 与其他文本文件）里没有任何一行参考答案；有就列出来并以非零状态退出。

make student-book（或 make book STUDENT=1）依次调用这两步，中间用 jupyter-book 构建。
"""
from __future__ import annotations

import argparse
import html
import json
import pathlib
import re
import shutil
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tfcourse.instructor.chapters import chapter_key, load_chapter, solution_lines, student_notebook, write_json  # noqa: E402

TEXT_SUFFIXES = {".html", ".htm", ".ipynb", ".md", ".txt", ".py", ".json", ".js"}


def _notebooks() -> list[pathlib.Path]:
    return sorted((ROOT / "book").glob("p*/ch*.ipynb"))


def prepare(out: pathlib.Path, chapters: list[str] | None, execute: bool) -> None:
    from tfcourse.exercises import EXERCISES

    with_exercises = {eid.split(".")[0] for eid in EXERCISES}
    wanted = {chapter_key(c) for c in chapters} if chapters else None
    if out.exists():
        shutil.rmtree(out)
    (out / "book").mkdir(parents=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = f"{config['title']}（学生版）"
    if not execute:
        config["execute"]["execute_notebooks"] = "off"
    (out / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    if wanted is not None:
        for part in toc.get("parts", []):
            part["chapters"] = [c for c in part["chapters"] if chapter_key(pathlib.Path(c["file"]).name) in wanted]
        toc["parts"] = [p for p in toc.get("parts", []) if p["chapters"]]
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    for item in (ROOT / "book").iterdir():                       # 前言、扩展、静态文件、常数表……照抄
        if item.is_dir() and item.name.startswith("p") and any(item.glob("ch*.ipynb")):
            continue
        (shutil.copytree if item.is_dir() else shutil.copy2)(item, out / "book" / item.name)
    for path in _notebooks():
        key = chapter_key(path.stem)
        if wanted is not None and key not in wanted:
            continue
        target = out / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        if key in with_exercises:
            write_json(target, student_notebook(load_chapter(str(path))))
        else:
            shutil.copy2(path, target)
    print(f"学生版网站的源文件已写到 {out}/")


def _text(path: pathlib.Path) -> str:
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(raw)
            return "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []))
        except ValueError:
            return raw
    if path.suffix in (".html", ".htm"):
        return html.unescape(re.sub(r"<[^>]+>", "", raw))        # 代码高亮把一行拆成许多 <span>：去掉标签再找
    return raw


def leaks(site: pathlib.Path) -> list[str]:
    """网站里出现的参考答案行：[(文件: 行)]。"""
    lines = solution_lines([json.loads(p.read_text(encoding="utf-8")) for p in _notebooks()])
    found = []
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            text = _text(path)
            found += [f"{path.relative_to(site)}: {ln}" for ln in sorted(lines) if ln in text]
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="学生版网站：准备源文件 / 检查没有参考答案")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("out", type=pathlib.Path)
    a.add_argument("--chapters", help="只放这几章，逗号分隔，如 ch01,ch03")
    a.add_argument("--no-execute", action="store_true", help="不执行笔记本（只检查页面与源文件时用）")
    s = sub.add_parser("scan")
    s.add_argument("site", type=pathlib.Path)
    args = p.parse_args(argv)
    if args.command == "prepare":
        prepare(args.out, args.chapters.split(",") if args.chapters else None, not args.no_execute)
        return 0
    if not args.site.is_dir():
        print(f"找不到网站目录 {args.site}", file=sys.stderr)
        return 1
    found = leaks(args.site)
    if found:
        print(f"学生版网站里出现了 {len(found)} 处参考答案：", file=sys.stderr)
        print("\n".join(found[:50]), file=sys.stderr)
        return 1
    n = sum(1 for f in args.site.rglob("*") if f.is_file() and f.suffix in TEXT_SUFFIXES)
    print(f"✓ 学生版网站的 {n} 个文本文件里没有参考答案")
    return 0


if __name__ == "__main__":
    sys.exit(main())
