"""各章的运行时间与预算：一个基准，不是测试（墙上时间在不同机器上差一半以上，任何测试都不按它断言）。

    python tools/bench.py run [13 15 …]   在这台机器上一章接一章地执行（每章独占全部核），报告每章的用时
    python tools/bench.py summary         读 make test 里 nbval 的执行记录（jupyter-cache），打印同样的表

预算是每章 start_chapter(…, budget_s=…) 写的数（一般 60 秒，训练模型的章 180 秒），指的是比这台机器
慢 1.5 倍的两核机器；所以在这里超过预算的三分之二就标出来（⚠）。用时取每章最后一个单元打印的
"第 N 章运行时间：… 秒"（与读者在网页上看到的是同一个数）。run 把结果写进 _build/bench.json。
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtool  # noqa: E402

SLOWER_MACHINE = 1.5                        # 预算针对的机器比这台慢多少
TIME_RE = re.compile(r"(?:第 (\d+) 章|附录 ([A-Z]) )运行时间：([\d.]+) 秒")


def budget_of(nb) -> float:
    """章节第一个 start_chapter(…) 调用里的 budget_s（没写就是默认的 60 秒）。"""
    for cell in nb.cells:
        if cell.cell_type == "code" and "start_chapter(" in cell.source:
            m = re.search(r"budget_s\s*=\s*([\d.]+)", cell.source)
            return float(m.group(1)) if m else 60.0
    raise ValueError("笔记本里没有 start_chapter(…)")


def reported_seconds(nb) -> float | None:
    """最后一个代码单元打印的本章运行时间。"""
    for cell in reversed(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            m = TIME_RE.search(out.get("text", "") or "".join(out.get("data", {}).get("text/plain", "")))
            if m:
                return float(m.group(3))
        return None
    return None


def slowest_cells(nb, n: int = 3) -> list[tuple[float, str]]:
    """nbclient 记录了时间戳的单元里最慢的 n 个：(秒, 第一行)。"""
    from datetime import datetime

    out = []
    for cell in nb.cells:
        ex = cell.get("metadata", {}).get("execution", {})
        start, end = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
        if start and end:
            secs = (datetime.fromisoformat(end.rstrip("Z")) - datetime.fromisoformat(start.rstrip("Z"))).total_seconds()
            first = next((ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
            out.append((secs, first[:60]))
    return sorted(out, reverse=True)[:n]


def table(rows: list[dict], note: str, flag: bool = True) -> str:
    """各章用时的表；flag 时把超过预算 2/3 的章标出来（⚠）。"""
    lines = [note, "", f"{'章':<5}{'用时(秒)':>10}{'预算(秒)':>10}{'占预算':>8}  ", "-" * 40]
    flagged = []
    for r in rows:
        if r["seconds"] is None:
            lines.append(f"ch{r['chapter']:02d}{'—':>11}{r['budget']:>10.0f}{'':>8}  没有找到运行时间")
            continue
        share = r["seconds"] / r["budget"]
        mark = "⚠" if flag and share > 1 / SLOWER_MACHINE else ""
        if mark:
            flagged.append(r)
        lines.append(f"ch{r['chapter']:02d}{r['seconds']:>11.1f}{r['budget']:>10.0f}{share:>8.0%}  {mark}")
        for secs, first in r.get("slowest", []) if mark else []:
            lines.append(f"        {secs:6.1f} 秒  {first}")
    total = sum(r["seconds"] or 0 for r in rows)
    lines += ["-" * 40, f"合计 {total:.0f} 秒"]
    if not flag:
        pass
    elif flagged:
        lines.append(f"⚠ {len(flagged)} 章超过预算的 2/3：在慢 {SLOWER_MACHINE} 倍的两核机器上会超出预算。")
    else:
        lines.append(f"每章都在预算的 2/3 以内（慢 {SLOWER_MACHINE} 倍的两核机器上也在预算之内）。")
    return "\n".join(lines)


def _chapter_number(path: pathlib.Path) -> int:
    return int(re.search(r"ch(\d+)-", path.name).group(1))


def run(chapters: list[int]) -> int:
    import nbformat
    from nbclient import NotebookClient

    rows = []
    for path in nbtool.chapter_notebooks():
        n = _chapter_number(path)
        if chapters and n not in chapters:
            continue
        nb = nbformat.read(str(path), as_version=4)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=1200, kernel_name="python3", record_timing=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        wall = time.perf_counter() - t0
        rows.append(dict(chapter=n, budget=budget_of(nb), seconds=reported_seconds(nb), wall=wall,
                         load_before=load, slowest=slowest_cells(nb)))
        print(f"ch{n:02d}：{rows[-1]['seconds']} 秒（含启动内核 {wall:.1f} 秒，开始时负载 {load:.2f}）", flush=True)
    out = ROOT / "_build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(dict(when=time.strftime("%Y-%m-%d %H:%M:%S"), cpus=os.cpu_count(), rows=rows),
                              ensure_ascii=False, indent=1), encoding="utf-8")
    print()
    print(table(rows, f"make bench：一章接一章地执行，每章独占这台机器的 {os.cpu_count()} 个核（结果也写进 {out.relative_to(ROOT)}）"))
    return 0


def summary(cache: pathlib.Path) -> int:
    """make test 的结尾：nbval 这次执行的每一章用了多少秒（两章同时执行，所以偏大）。"""
    from jupyter_cache import get_cache

    records = {}
    for rec in get_cache(str(cache)).list_cache_records():
        path = pathlib.Path(rec.uri)
        if re.match(r"ch\d+-", path.name) and path.exists():
            nb = get_cache(str(cache)).get_cache_bundle(rec.pk).nb
            records[_chapter_number(path)] = dict(chapter=_chapter_number(path), budget=budget_of(nb),
                                                  seconds=reported_seconds(nb))
    rows = [records[k] for k in sorted(records)]
    print(table(rows, "各章运行时间（make test 的 nbval 两章同时执行，每章只分到约一个核，时间偏大，"
                      "所以这里不和预算比；预算检查用 make bench）", flag=False))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "run":
        return run([int(a) for a in argv[2:]])
    if len(argv) >= 2 and argv[1] == "summary":
        return summary(ROOT / "_build" / ".jupyter_cache")
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
