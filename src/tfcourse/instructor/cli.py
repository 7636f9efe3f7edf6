"""命令行 tfcourse：assign（布置一章）与 grade（给全班评分）。pyproject.toml 的 [project.scripts] 安装它。"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

from .chapters import InstructorError, chapters_with_exercises
from .sandbox import UNSAFE_FLAG, Limits, format_size, parse_size

USAGE = """\
tfcourse assign ch07 --out dist/
    写出 dist/student/<章>.ipynb（学生版：去掉参考答案、清除输出）、dist/solved/<章>.ipynb（答案卷）、dist/manifest.json
tfcourse grade ch07 submissions/ --out grades/ --seed 秘密种子 [--jobs 2] [--timeout 60] [--memory 2G] [--max-procs 64]
    给文件夹里的每份提交评分：grades/grades.csv、grades/feedback/<学号>.md、grades/results/<学号>.json（Gradescope 格式）
    每份提交关在 bubblewrap 沙箱里；沙箱起不来就不评分（除非加上 --unsafe-no-sandbox）。
    评分前先评一遍答案卷：它不是满分就不评分、不写任何文件。
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse 自带的错误是英文：换成一句中文
        self.print_usage(sys.stderr)
        self.exit(2, f"参数有误：{message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tfcourse", description="《从零构建 Transformer》教师工具：布置作业、给全班评分。",
                epilog=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter, add_help=True)
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    a = sub.add_parser("assign", help="把一章做成作业（学生版不含参考答案）")
    a.add_argument("chapter", nargs="?", help="章节，如 ch07；或一个笔记本的路径")
    a.add_argument("--out", type=pathlib.Path, default=pathlib.Path("dist"), help="输出文件夹（默认 dist/）")
    a.add_argument("--book", type=pathlib.Path, help="书的目录（默认：当前目录或课程包所在仓库的 book/）")
    g = sub.add_parser("grade", help="用秘密种子给一个文件夹里的全部提交评分")
    g.add_argument("chapter", nargs="?", help="章节，如 ch07")
    g.add_argument("submissions", nargs="?", type=pathlib.Path, help="放着全部提交的文件夹")
    g.add_argument("--out", type=pathlib.Path, default=pathlib.Path("grades"), help="输出文件夹（默认 grades/）")
    g.add_argument("--seed", default=os.environ.get("TFCOURSE_SEED"),
                   help="秘密种子（任意字符串；也可以用环境变量 TFCOURSE_SEED 给出）。不要告诉学生")
    g.add_argument("--jobs", type=int, default=2, help="同时评几份（默认 2）")
    g.add_argument("--timeout", type=float, default=60.0, help="每份提交最多运行几秒（默认 60）")
    d = Limits()
    g.add_argument("--memory", default=format_size(d.memory),
                   help=f"每份提交最多用多少内存（地址空间，如 2G、1500M；默认 {format_size(d.memory)}）")
    g.add_argument("--max-procs", type=int, default=d.procs,
                   help=f"每份提交最多几个进程与线程（默认 {d.procs}）")
    g.add_argument("--max-file-size", default=format_size(d.file_size),
                   help=f"每份提交写的单个文件最大多少（默认 {format_size(d.file_size)}）")
    g.add_argument("--max-cpu", type=int, default=d.cpu,
                   help=f"每份提交最多用几秒 CPU 时间（默认 {d.cpu}；墙钟时间由 --timeout 管）")
    g.add_argument("--max-output", default=format_size(d.output),
                   help=f"每份提交最多打印多少输出（默认 {format_size(d.output)}；超过就停止它）")
    g.add_argument("--id-regex", help="从文件的相对路径里取学号的正则（命名组 id 或第 1 组）；默认用文件名")
    g.add_argument("--manifest", type=pathlib.Path, help="assign 写出的 manifest.json（可在其中改每题分值）")
    g.add_argument("--book", type=pathlib.Path, help="书的目录（默认：当前目录或课程包所在仓库的 book/）")
    g.add_argument(UNSAFE_FLAG, action="store_true",
                   help="不用沙箱评分：学生代码以你的权限运行（能读写你的文件、访问网络）。"
                        "默认必须有能用的 bubblewrap，否则不评分")
    g.add_argument("--sandbox", help=argparse.SUPPRESS)     # 已取消：给了就说明改用 --unsafe-no-sandbox
    return p


def _need_chapter(args) -> None:
    if not args.chapter:
        have = "、".join(chapters_with_exercises())
        raise InstructorError(f"请指定章节，例如 tfcourse {args.command} ch07。有练习的章：{have}。")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            parser.print_help()
            return 2
        _need_chapter(args)
        if args.command == "assign":
            from .assign import assign

            ch = assign(args.chapter, args.out, args.book)
            print(f"第 {int(ch.key[2:])} 章（{ch.filename}）的作业已写到 {args.out}/：")
            print(f"  student/{ch.filename}  学生版（去掉了 {len(ch.exercises)} 道练习的参考答案，输出已清除）")
            print(f"  solved/{ch.filename}   答案卷（学生单元填上了参考答案）")
            print("  manifest.json  练习编号、学生函数名与分值：" +
                  "、".join(f"{s.id}→{s.function}（{s.points:g} 分）" for s in ch.exercises))
            return 0
        from .grade import grade_class, summary

        if args.submissions is None:
            raise InstructorError("请给出放提交的文件夹，例如 tfcourse grade ch07 submissions/ --seed 秘密种子。")
        if args.sandbox is not None:
            raise InstructorError(f"--sandbox 选项已取消：评分总是要求 bubblewrap 沙箱，起不来就不评分。"
                                  f"确实要在没有沙箱的情况下评分，请明确加上 {UNSAFE_FLAG}。")
        if not args.seed:
            raise InstructorError("请用 --seed 给出秘密种子（或设置环境变量 TFCOURSE_SEED）：隐藏用例由它生成。")
        try:
            limits = Limits(memory=parse_size(args.memory), procs=args.max_procs,
                            file_size=parse_size(args.max_file_size), cpu=args.max_cpu,
                            output=parse_size(args.max_output))
        except ValueError as exc:
            raise InstructorError(str(exc)) from None
        if min(limits.memory, limits.procs, limits.file_size, limits.cpu, limits.output) <= 0:
            raise InstructorError("资源上限都要大于 0。")
        result = grade_class(args.chapter, args.submissions, args.out, args.seed, jobs=args.jobs,
                             timeout=args.timeout, id_regex=args.id_regex, book=args.book,
                             manifest=args.manifest, unsafe_no_sandbox=args.unsafe_no_sandbox, limits=limits)
        print(f"结果已写到 {args.out}/：grades.csv、feedback/、results/")
        print(summary(result))                     # 最后一行是 "N passed, M failed"
        return 0
    except InstructorError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
