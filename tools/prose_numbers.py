"""正文里的数字必须是真的：列出执行过的章节笔记本里，Markdown 单元说出、但本章代码与输出里都找不到的数字。

  python tools/prose_numbers.py 执行过的笔记本.ipynb …     # 没有问题时什么也不打印，退出码 0

"数字"指小数（0.457）、百分数（26.1%）和科学计数法（6.0e-08、2.7 × 10^{-5}）。一个数字算"找到了"，当
- 它原样出现在本章某个代码单元的源码或输出里（文本、Markdown、HTML、LaTeX 输出都算），或
- 它是输出里某个数按它的位数四舍五入的结果（正文写 0.46，输出是 0.457；至少两位有效数字时才这样认），
  百分数也可以是输出里某个比例乘 100 的结果（正文写 26.1%，输出是 0.2610），或
- 它列在笔记本元数据 metadata.tfcourse.constants 里（文献常数或定义性常数，每项写明出处）：
  [{"value": "0.1", "source": "Vaswani et al. 2017, §5.4"}]。
章节号（§3.2、"6.1 节"、标题开头的 "### 2.3"）、三段式版本号（1.0.4）和"torch 2.13"这类版本号不算数字。
网站构建之后，tests/browser/test_prose_numbers.py 对目录里的每一章运行这项检查。
"""
from __future__ import annotations

import html
import json
import math
import re
import sys
from dataclasses import dataclass

__all__ = ["Stated", "stated_numbers", "unchecked", "main"]

_SCI_TEX = r"(?P<m>\d+(?:\.\d+)?)\s*(?:\\times|×|\\cdot|·)\s*10\^\{?(?P<e>[-−]?\d+)\}?"
_SCI_E = r"(?P<m2>\d+(?:\.\d+)?)[eE](?P<e2>[-−+]?\d+)"
_PLAIN = r"(?P<n>\d+\.\d+)(?P<pct>\s*(?:%|\\%))?|(?P<i>\d+)(?P<ipct>\s*(?:%|\\%))"
NUMBER = re.compile(rf"(?<![\w.§]){_SCI_TEX}|(?<![\w.§]){_SCI_E}(?![\w.])|(?<![\w.§])(?:{_PLAIN})(?![\d.]\d)")
_VERSION = re.compile(r"\d+\.\d+\.\d+|(?:torch|PyTorch|Python|numpy|Sphinx|版本|v)\s*\d+\.\d+", re.I)
_LINK_TARGET = re.compile(r"\]\([^)]*\)|<[^>]+>|https?://\S+")
_SECTION = re.compile(r"^#+\s*\d+(?:\.\d+)*|\d+(?:\.\d+)+\s*(?:节|小节)|§\s*\d+(?:\.\d+)*", re.M)


@dataclass(frozen=True)
class Stated:
    text: str          # 正文里的写法
    value: float       # 数值（百分数已除以 100 之前的数，即 26.1% → 26.1）
    decimals: int      # 小数位数（科学计数法：尾数的小数位数）
    percent: bool
    scientific: bool

    def sig_digits(self) -> int:
        digits = re.sub(r"\D", "", self.text.split("e")[0].split("E")[0].split("×")[0].split("\\")[0])
        return len(digits.lstrip("0")) or 1


def _num(s: str) -> float:
    return float(s.replace("−", "-"))


def stated_numbers(markdown: str) -> list[Stated]:
    """正文说出的小数、百分数与科学计数法数字（去掉链接地址、HTML 标签、章节号和版本号之后）。"""
    text = _LINK_TARGET.sub(" ", markdown)
    text = _VERSION.sub(" ", text)
    text = _SECTION.sub(" ", text)
    found = []
    for m in NUMBER.finditer(text):
        if m.group("m") is not None:
            mant, exp = m.group("m"), m.group("e")
            found.append(Stated(m.group(0), _num(mant) * 10 ** _num(exp), _decimals(mant), False, True))
        elif m.group("m2") is not None:
            mant, exp = m.group("m2"), m.group("e2")
            found.append(Stated(m.group(0), _num(mant) * 10 ** _num(exp), _decimals(mant), False, True))
        elif m.group("n") is not None:
            found.append(Stated(m.group(0), _num(m.group("n")), _decimals(m.group("n")),
                                bool(m.group("pct")), False))
        else:
            found.append(Stated(m.group(0), _num(m.group("i")), 0, True, False))
    return found


def _decimals(s: str) -> int:
    return len(s.split(".")[1]) if "." in s else 0


def _cell_text(cell) -> str:
    parts = ["".join(cell.get("source", ""))]
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]))
        for mime, data in (out.get("data") or {}).items():
            if mime.startswith("text/") or mime == "application/json":
                body = "".join(data) if isinstance(data, list) else str(data)
                if mime == "text/html":
                    body = html.unescape(re.sub(r"<[^>]+>", " ", body))
                parts.append(body)
    return "\n".join(parts)


_ANY = re.compile(r"[-−]?\d+(?:\.\d+)?(?:[eE][-−+]?\d+)?")


def _corpus(nb) -> tuple[str, list[float]]:
    text = "\n".join(_cell_text(c) for c in nb["cells"] if c["cell_type"] == "code")
    values = []
    for tok in _ANY.findall(text.replace(",", "")):
        try:
            values.append(abs(_num(tok)))
        except ValueError:
            pass
    return text, values


def _round_matches(target: float, decimals: int, value: float) -> bool:
    return math.isclose(round(value, decimals), target, rel_tol=0, abs_tol=10 ** -(decimals + 6))


def _found(s: Stated, text: str, values: list[float], constants: set[str]) -> bool:
    plain = s.text.replace("\\%", "%").replace(" ", "")
    if plain in constants or plain.rstrip("%") in constants or s.text in constants:
        return True
    if not s.scientific:
        literal = re.escape(plain.rstrip("%"))
        if re.search(rf"(?<![\d.]){literal}(?!\d)", text):
            return True
        if s.sig_digits() >= 2:
            targets = [s.value] + ([s.value / 100] if s.percent else [])
            for target in targets:
                dec = s.decimals + (2 if target is not s.value else 0)
                if any(_round_matches(target, dec, v) for v in values):
                    return True
        return False
    # 科学计数法：按正文的有效数字比较数值
    if s.value == 0:
        return False
    scale = 10 ** (math.floor(math.log10(abs(s.value))) - s.decimals)
    return any(abs(v - abs(s.value)) <= 0.5 * scale * (1 + 1e-9) for v in values if v)


def unchecked(nb: dict) -> list[tuple[int, str, str]]:
    """(单元序号, 数字的写法, 上下文) 的列表：正文说出、但本章代码和输出里找不到的数字。"""
    meta = nb.get("metadata", {}).get("tfcourse", {})
    constants = {str(c["value"]).replace(" ", "") for c in meta.get("constants", [])}
    text, values = _corpus(nb)
    problems = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        for s in stated_numbers(source):
            if not _found(s, text, values, constants):
                at = source.find(s.text)
                context = source[max(0, at - 30): at + len(s.text) + 30].replace("\n", " ")
                problems.append((i, s.text, context))
    return problems


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    bad = 0
    for path in argv[1:]:
        nb = json.loads(open(path, encoding="utf-8").read())
        if not any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"):
            print(f"{path}: 没有输出——先执行这个笔记本（检查要和本次运行的输出对照）")
            bad += 1
            continue
        for i, number, context in unchecked(nb):
            print(f"{path}: 单元 {i}：{number!r} 不在本章的代码与输出里 —— …{context}…")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
