"""章末自测（每章小结之后）：单选、多选、填一个数（带容差），在页面上当场判分。

题目和判分规则都在 Python 里写好、随小部件的状态一起存进网页，所以在没有内核的静态网站上也能作答；
读者的作答存在浏览器里（localStorage），刷新后还在；每题下面给出对错和解释，选错的选项各自说明错在哪里。
问本章算出的数时，答案取本次运行的变量（`Quiz.number(..., answer=acc)`），不手抄常数。

选项的顺序不带信息：每道选择题按章号与题号洗一次牌（固定的，网页、笔记本与 PDF 的答案页看到的顺序相同），
单选题的正确选项在一章里均匀地落在各个位置；作者写选项时按什么顺序都行。作答按选项记（每个选项有一个由
文字算出的 `key`），不按位置记，所以题目改了顺序，读者存下的作答仍指向原来的选项。

第 14 章引入；`tfcourse assign` 生成学生版时保留它（它不是参考答案）。
"""
from __future__ import annotations

import hashlib
import math
import random

import traitlets as t

from ._base import CourseWidget, esm

__all__ = ["Quiz", "arrange", "blind_scores"]

KINDS = ("single", "multi", "number")


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} 应为非空的字符串，实际为 {value!r}。")
    return value.strip()


class Quiz(CourseWidget):
    """questions：一组题目（用 Quiz.single / Quiz.multi / Quiz.number 构造）。chapter：章号（作答按章存在浏览器里）。

    判分规则（`grade` 与前端相同）：单选、多选要选中的集合与正确的集合完全相同；填数题 |作答 − 答案| ≤ 容差。"""

    _esm = esm("quiz.js")

    chapter = t.Int().tag(sync=True)
    questions = t.List(t.Dict()).tag(sync=True)
    answers = t.Dict().tag(sync=True)          # 读者的作答：{题号: [选项下标] 或 数}（前端写回）

    def __init__(self, questions, *, chapter: int, **kwargs):
        if isinstance(chapter, bool) or not isinstance(chapter, int) or not 1 <= chapter <= 18:
            raise ValueError(f"chapter 应为 1–18 的整数（17、18 是附录 A、B），实际为 {chapter!r}。")
        qs = list(questions)
        if not qs:
            raise ValueError("questions 是空的：自测至少要有一道题。")
        for i, q in enumerate(qs):
            if not isinstance(q, dict) or q.get("kind") not in KINDS:
                raise ValueError(f"第 {i + 1} 题应由 Quiz.single / Quiz.multi / Quiz.number 构造，实际为 {q!r}。")
        ids = [q["id"] for q in qs]
        super().__init__(chapter=chapter, questions=arrange(qs, chapter), **kwargs)
        if len(set(ids)) != len(ids):
            raise ValueError(f"题号重复：{ids}。")

    # ------------------------------------------------------------------ 构造题目
    @staticmethod
    def single(qid: str, prompt: str, options, *, code: str | None = None) -> dict:
        """单选：options 是 (选项文字, 是否正确, 为什么) 的序列，恰好一个正确；每个选项都要有"为什么"
        （选错时显示它错在哪里、该回看哪一节；选对时显示正确的理由）。"""
        return Quiz._choice("single", qid, prompt, options, code)

    @staticmethod
    def multi(qid: str, prompt: str, options, *, code: str | None = None) -> dict:
        """多选（可选多个）：至少一个正确、至少一个错误；选中的集合与正确的集合完全相同才算对。"""
        return Quiz._choice("multi", qid, prompt, options, code)

    @staticmethod
    def _choice(kind, qid, prompt, options, code):
        opts = []
        for j, opt in enumerate(options):
            if not (isinstance(opt, (tuple, list)) and len(opt) == 3 and isinstance(opt[1], bool)):
                raise ValueError(f"{qid} 的第 {j + 1} 个选项应为 (文字, 是否正确, 为什么)，实际为 {opt!r}。")
            text = _text(opt[0], f"{qid} 选项 {j + 1} 的文字")
            if any(o["text"] == text for o in opts):
                raise ValueError(f"{qid} 的选项「{text}」写了两遍。")
            opts.append({"key": option_key(text), "text": text, "correct": opt[1],
                         "why": _text(opt[2], f"{qid} 选项 {j + 1} 的解释")})
        n_right = sum(o["correct"] for o in opts)
        if len(opts) < 2:
            raise ValueError(f"{qid} 至少要有两个选项，实际 {len(opts)} 个。")
        if kind == "single" and n_right != 1:
            raise ValueError(f"{qid} 是单选题，应恰好有一个正确选项，实际 {n_right} 个。")
        if kind == "multi" and not 1 <= n_right < len(opts):
            raise ValueError(f"{qid} 是多选题，正确选项应至少一个、且不能全对，实际 {n_right} / {len(opts)} 个。")
        q = {"id": _text(qid, "题号"), "kind": kind, "prompt": _text(prompt, f"{qid} 的题干"), "options": opts}
        if code is not None:
            q["code"] = _text(code, f"{qid} 的代码")
        return q

    @staticmethod
    def number(qid: str, prompt: str, *, answer: float, tolerance: float, why: str, hint: str, unit: str = "",
               code: str | None = None) -> dict:
        """填一个数：|作答 − answer| ≤ tolerance 算对。answer 取本次运行算出的值；
        why：答对后显示，说明它从哪里来；hint：答错时显示，指回该看的那一节（不泄露答案）。"""
        if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
            raise ValueError(f"{qid} 的 answer 应为有限的数，实际为 {answer!r}。")
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
            raise ValueError(f"{qid} 的 tolerance 应为 ≥ 0 的数，实际为 {tolerance!r}。")
        q = {"id": _text(qid, "题号"), "kind": "number", "prompt": _text(prompt, f"{qid} 的题干"),
             "answer": float(answer), "tolerance": float(tolerance), "why": _text(why, f"{qid} 的解释"),
             "hint": _text(hint, f"{qid} 的提示"),
             "unit": str(unit)}
        if code is not None:
            q["code"] = _text(code, f"{qid} 的代码")
        return q

    # ------------------------------------------------------------------ 判分
    def grade(self, answers: dict) -> dict:
        """answers：{题号: 选中的选项列表（单选也用列表）或 一个数}。选项用它的 key（前端存的就是 key），
        或者它在显示顺序里的下标。返回 {题号: True / False / None（没答）}。"""
        out = {}
        for q in self.questions:
            a = answers.get(q["id"])
            if a is None or a == []:
                out[q["id"]] = None
            elif q["kind"] == "number":
                out[q["id"]] = (isinstance(a, (int, float)) and not isinstance(a, bool)
                                and abs(float(a) - q["answer"]) <= q["tolerance"] + 1e-12)
            else:
                keys = [o["key"] for o in q["options"]]
                picked = {keys[j] if isinstance(j, int) and 0 <= j < len(keys) else j for j in a}
                out[q["id"]] = picked == {o["key"] for o in q["options"] if o["correct"]}
        return out

    def score(self, answers: dict | None = None) -> tuple[int, int]:
        """(答对的题数, 题数)；answers 缺省时用读者在小部件里的作答。"""
        graded = self.grade(self.answers if answers is None else answers)
        return sum(v is True for v in graded.values()), len(self.questions)


def option_key(text: str) -> str:
    """一个选项的身份：由文字算出（与位置无关），前端按它存作答。"""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def _rng(chapter: int, qid: str) -> random.Random:
    digest = hashlib.sha256(f"tfcourse-quiz:{chapter}:{qid}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def arrange(questions: list[dict], chapter: int) -> list[dict]:
    """选项显示的顺序：每道选择题按 (章号, 题号) 洗一次牌（固定的）；单选题的正确选项放在本章里
    到目前为止用得最少的位置之一（同样由题号决定选哪一个），这样一章的答案均匀地分布在各个位置上。"""
    used: dict[int, int] = {}
    out = []
    for q in questions:
        if q["kind"] == "number":
            out.append(q)
            continue
        rng = _rng(chapter, q["id"])
        shown = list(q["options"])
        rng.shuffle(shown)
        if q["kind"] == "single":
            n = len(shown)
            least = min(used.get(p, 0) for p in range(n))
            target = rng.choice([p for p in range(n) if used.get(p, 0) == least])
            shown.insert(target, shown.pop(next(i for i, o in enumerate(shown) if o["correct"])))
            used[target] = used.get(target, 0) + 1
        out.append({**q, "options": shown})
    return out


def blind_scores(questions: list[dict]) -> dict:
    """不读题就作答能得几分（选择题的期望得分率，0–1）：
    first：总选显示的第一个选项；longest / shortest：总选最长 / 最短的选项（并列时在并列者里随便挑）；
    guess：随便选（单选 1/n；多选在 2ⁿ − 1 个非空组合里随便挑一个）。多选题的 first、longest 只选那一个。
    返回 {"n": 选择题数, "first": …, "longest": …, "shortest": …, "guess": …, "positions": 单选题正确选项各位置的次数}。"""
    choice = [q for q in questions if q["kind"] in ("single", "multi")]
    first = longest = shortest = guess = 0.0
    positions: dict[int, int] = {}
    for q in choice:
        opts = q["options"]
        right = {j for j, o in enumerate(opts) if o["correct"]}
        first += right == {0}
        for pick, agg in ((max, "longest"), (min, "shortest")):
            width = pick(len(o["text"]) for o in opts)
            tied = [j for j, o in enumerate(opts) if len(o["text"]) == width]
            hit = sum({j} == right for j in tied) / len(tied)
            if agg == "longest":
                longest += hit
            else:
                shortest += hit
        guess += 1 / len(opts) if q["kind"] == "single" else 1 / (2 ** len(opts) - 1)
        if q["kind"] == "single":
            (j,) = right
            positions[j] = positions.get(j, 0) + 1
    n = len(choice)
    return {"n": n, "first": first / n if n else 0.0, "longest": longest / n if n else 0.0,
            "shortest": shortest / n if n else 0.0, "guess": guess / n if n else 0.0, "positions": positions}
