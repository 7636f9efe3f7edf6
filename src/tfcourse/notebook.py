"""章节笔记本里的小工具：展示包里的源码（略去输入校验）、核对通过时打印一行 ✓。第 1 章引入，各章共用。

- show_source(obj)：把 obj 的源码显示成代码块，输入校验（if … raise、_check…() 调用）折成一行注释，
  读者看到的是讲课的那几行；
- ok(what)：核对单元的最后一行，打印"✓ 核对通过：…"；
- say(text)：把代码生成的句子（"本次运行：…"）显示成正文（所在单元加标签 remove-input，读者只看到句子）。
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap

__all__ = ["teaching_source", "show_source", "ok", "say", "escape_html"]

ELIDED = "# （输入校验，略）"


def _call_name(node) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{base}.{func.attr}"
    return ""


def _is_check(stmt) -> bool:
    """只为校验输入而存在的语句：以 raise 结尾的 if、全是校验的 for、_check…() / _checks.…() 调用。"""
    if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body:
        return isinstance(stmt.body[-1], ast.Raise)
    if isinstance(stmt, ast.For) and not stmt.orelse:
        return all(_is_check(s) for s in stmt.body)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        name = _call_name(stmt.value)
        return name.startswith(("_check", "_checks.", "self._check"))
    return False


def _blocks(node):
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(node, "handlers", []) or []:
        yield handler.body


def teaching_source(obj, skip: tuple[str, ...] = ()) -> str:
    """obj（函数、类或方法）的源码，输入校验折成一行 ELIDED 注释；skip 里列出的方法整个略去。"""
    source = textwrap.dedent(inspect.getsource(obj))
    lines = source.splitlines()
    tree = ast.parse(source)
    drop: dict[int, int] = {}                 # 起始行 → 结束行（1 起算，含）
    skipped: set[int] = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name in skip:
                first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
                skipped.update(range(first, fn.end_lineno + 1))
    stack = [tree]
    while stack:
        node = stack.pop()
        for block in _blocks(node):
            for stmt in block:
                if _is_check(stmt):
                    drop[stmt.lineno] = stmt.end_lineno
                else:
                    stack.append(stmt)
    for start in sorted(list(drop) + sorted(skipped)):      # 紧挨在略去部分上方的注释行也一起略去
        j = start - 1
        while j >= 1 and lines[j - 1].strip().startswith("#") and j not in skipped:
            skipped.add(j)
            j -= 1
    out, i = [], 1
    while i <= len(lines):
        if i in skipped:
            i += 1
            continue
        if i in drop:
            indent = lines[i - 1][: len(lines[i - 1]) - len(lines[i - 1].lstrip())]
            if not (out and out[-1].strip() == ELIDED):
                out.append(indent + ELIDED)
            i = drop[i] + 1
            while i in drop:                   # 相邻的校验合成一行
                i = drop[i] + 1
            continue
        out.append(lines[i - 1])
        i += 1
    text = "\n".join(out).rstrip() + "\n"
    while "\n\n\n\n" in text:                 # 略去方法后留下的多余空行
        text = text.replace("\n\n\n\n", "\n\n\n")
    return text


def show_source(obj, skip: tuple[str, ...] = ()) -> None:
    """在笔记本里把 obj 的讲课部分显示成 Python 代码块（所在单元加标签 remove-input）。"""
    from IPython.display import Markdown, display

    display(Markdown("```python\n" + teaching_source(obj, skip) + "```"))


def ok(what: str) -> None:
    """核对单元的最后一行：上面的断言都通过了才会走到这里。"""
    print(f"✓ 核对通过：{what}")


# 代码片段（`…`）与公式（$…$、$$…$$）原样保留；其余部分里的 & < > 转成 HTML 实体
_VERBATIM = re.compile(r"(`+)(?:.|\n)*?\1|\$\$(?:.|\n)*?\$\$|\$[^$\n]+\$")


def escape_html(text: str) -> str:
    """把 Markdown 文本里代码片段与公式之外的 &、<、> 转成实体：生成的句子里的 <X>、<unk>
    是要显示的文字，不能被浏览器当成 HTML 标签吞掉。"""
    def esc(part: str) -> str:
        return part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    out, last = [], 0
    for m in _VERBATIM.finditer(text):
        out += [esc(text[last:m.start()]), m.group(0)]
        last = m.end()
    out.append(esc(text[last:]))
    return "".join(out)


def say(text: str) -> None:
    """把代码生成的句子显示成正文（MyST Markdown，$…$ 会渲染成公式）。

    句子里的 &、<、> 按字面显示（`…` 与 $…$ 里的不动）：say("哨兵 <X>") 在网页上就是「哨兵 <X>」。
    """
    from IPython.display import Markdown, display

    display(Markdown(escape_html(text)))
