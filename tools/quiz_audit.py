"""不读题能在自测里得几分：按网页上显示的顺序（小部件保存的状态），每章与全书的"总选第一个"、
"总选最长的"、"总选最短的"、"随便猜"的得分率，以及单选题正确选项落在各位置的次数。

  python tools/quiz_audit.py                      # 读构建好的网站 _build/html
  python tools/quiz_audit.py 执行过的笔记本.ipynb …  # 读执行过的笔记本里保存的小部件状态
"""
from __future__ import annotations

import html
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tfcourse.widgets.quiz import blind_scores  # noqa: E402

STATE = re.compile(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', re.S)


def quizzes_in(path: pathlib.Path) -> list[dict]:
    """一个网页或执行过的笔记本里每个自测小部件的状态（含 chapter 与 questions）。"""
    if path.suffix == ".ipynb":
        states = [json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("widgets", {})
                  .get("application/vnd.jupyter.widget-state+json", {})]
    else:
        states = [json.loads(html.unescape(m)) for m in STATE.findall(path.read_text(encoding="utf-8"))]
    return [m["state"] for st in states for m in st.get("state", {}).values()
            if isinstance(m.get("state"), dict) and "questions" in m["state"] and "chapter" in m["state"]]


def audit(paths) -> tuple[dict, dict]:
    """(每章的 blind_scores, 全书的 blind_scores)。"""
    per, everything = {}, []
    for path in paths:
        for quiz in quizzes_in(pathlib.Path(path)):
            per[quiz["chapter"]] = blind_scores(quiz["questions"])
            everything += quiz["questions"]
    return dict(sorted(per.items())), blind_scores(everything)


def main(argv: list[str]) -> int:
    paths = argv or sorted((ROOT / "_build" / "html" / "book").rglob("ch*.html"))
    per, book = audit(paths)
    print(f"{'章':>3} {'题':>3} {'总选第一个':>6} {'总选最长的':>6} {'总选最短的':>6} {'随便猜':>6}  单选答案的位置（第几个选项: 题数）")
    for ch, r in per.items():
        pos = ", ".join(f"{p + 1}: {c}" for p, c in sorted(r["positions"].items()))
        print(f"{ch:>3} {r['n']:>3} {r['first']:>10.0%} {r['longest']:>10.0%} {r['shortest']:>10.0%} {r['guess']:>8.0%}  {pos}")
    print(f"全书 {book['n']:>3} {book['first']:>9.0%} {book['longest']:>10.0%} {book['shortest']:>10.0%} {book['guess']:>8.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
