"""训练课程自己的模型，写进 src/tfcourse/checkpoints/（`make checkpoints` 调用它）。

用法：
    python tools/checkpoints.py              # 按依赖顺序训练全部检查点
    python tools/checkpoints.py bert-zh ...  # 只训练这几个（它们依赖的检查点须已存在）
    python tools/checkpoints.py --list       # 列出所有作业

每个作业是 tools/ckpt_jobs/ 下的一个模块，定义：
    NAME = "bert-zh"            # 检查点名字
    NEEDS = ("...",)            # 依赖的检查点（先训练它们）
    def build() -> (state_dict, meta)
作业自己设种子；这里固定线程数（矩阵乘法的求和顺序与线程数有关），同一台机器上重跑得到相同的权重和数字
（meta 里记录的训练秒数每次都不同，所以文件的 SHA-256 会变：重训之后要一起提交新的 manifest.json）。
每个检查点的训练日志（每个种子的数字）写在它的 meta 里，也打印在终端上。
"""
from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

THREADS = 2


def jobs() -> dict:
    found = {}
    for path in sorted((ROOT / "tools" / "ckpt_jobs").glob("*.py")):
        if path.name.startswith("_"):
            continue
        mod = importlib.import_module(f"ckpt_jobs.{path.stem}")
        found[mod.NAME] = mod
    return found


def order(selected: list[str], table: dict) -> list[str]:
    done, out = set(), []

    def visit(name, stack=()):
        if name in done:
            return
        if name in stack:
            raise SystemExit(f"检查点作业的依赖成环：{' → '.join(stack + (name,))}")
        for dep in table[name].NEEDS:
            if dep not in table:
                raise SystemExit(f"作业 {name} 依赖的 {dep} 不是已知的作业")
            visit(dep, stack + (name,))
        done.add(name)
        out.append(name)

    for name in selected:
        visit(name)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    table = jobs()
    if args.list:
        for name, mod in table.items():
            print(f"{name:16s} 依赖 {', '.join(mod.NEEDS) or '—'}")
        return 0
    unknown = [n for n in args.names if n not in table]
    if unknown:
        raise SystemExit(f"不认识的作业：{', '.join(unknown)}；已有：{', '.join(table)}")
    plan = order(args.names, table) if args.names else order(list(table), table)
    if args.names:                       # 只训练点名的；依赖用已发布的
        plan = [n for n in plan if n in args.names]

    import torch
    from tfcourse import checkpoints
    torch.set_num_threads(THREADS)
    for name in plan:
        t0 = time.perf_counter()
        print(f"== {name} ==", flush=True)
        state, meta = table[name].build()
        meta = dict(meta, train_seconds_total=round(time.perf_counter() - t0, 1), threads=THREADS,
                    torch=torch.__version__)
        entry = checkpoints.save(name, state, meta)
        print(f"   写入 {entry['file']}：{entry['bytes'] / 1e6:.2f} MB，SHA-256 {entry['sha256'][:16]}…，"
              f"用时 {time.perf_counter() - t0:.0f} 秒", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
