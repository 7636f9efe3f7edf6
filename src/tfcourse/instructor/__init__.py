"""教师工具：tfcourse assign 布置一章（学生版不带参考答案），tfcourse grade 用秘密种子给全班评分。

- chapters：找到一章的笔记本，读出练习（编号、学生函数名、参考答案单元），生成学生版与答案卷；
- assign：写出 student/、solved/ 与 manifest.json；
- sandbox：用 bubblewrap（bwrap）把每份提交关进只读的文件系统、断网（bwrap 起不来就不评分，除非明确要求 --unsafe-no-sandbox）；
- runner：在沙箱里的新进程中执行一份提交的定义，并对给定的输入调用学生函数；
- grade：生成隐藏用例、先确认答案卷满分、逐份运行、比对参考答案，写 grades.csv、中文反馈与 Gradescope 格式的结果；
- cli：命令行入口 tfcourse。
"""
from .chapters import InstructorError

__all__ = ["InstructorError"]
