#!/usr/bin/env bash
# 检查并安装系统包：中文字体（构建网站时画图要用）、Chromium（浏览器测试要用）、
# bubblewrap（tfcourse grade 把每份学生提交关进沙箱；测试要检查沙箱真的挡住了写文件和联网）、
# poppler-utils（make pdf 之后检查 PDF：页数、字体是否嵌入、文字层、书签）。
#   tools/system-deps.sh fonts                      只要字体（make book）
#   tools/system-deps.sh fonts browser pdf          make pdf
#   tools/system-deps.sh fonts browser sandbox pdf  全部（make test、.ci/run）
set -euo pipefail
need=()
for what in "$@"; do
  case "$what" in
    fonts)   fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || need+=(fonts-noto-cjk fontconfig) ;;
    browser) command -v chromium >/dev/null 2>&1 || need+=(chromium) ;;
    sandbox) command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap) ;;
    pdf)     command -v pdffonts >/dev/null 2>&1 || need+=(poppler-utils) ;;
    *) echo "未知的参数：$what（可选 fonts、browser、sandbox、pdf）" >&2; exit 2 ;;
  esac
done
[ ${#need[@]} -eq 0 ] && exit 0

echo "需要安装系统包：${need[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "请用管理员权限运行：sudo apt-get install -y ${need[*]}，然后重新运行 make。" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "已安装：${need[*]}"
