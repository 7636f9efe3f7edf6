#!/usr/bin/env bash
# 重新取得网站自带的前端文件（不在正常构建中运行；文件已提交在 book/_extra/_static/vendor）。
# 网站不向外部 CDN 发任何请求：MathJax 由网站自己提供；小部件由本书自己的
# book/_extra/_static/tfcourse/widgets-static.js 渲染（不需要 require.js 与 ipywidgets 的 html-manager）。
set -euo pipefail
MATHJAX=3.2.2
AXE=4.14.1          # 只给浏览器测试用（无障碍审计），不进网站：放在 tests/browser/vendor/axe-core

here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/book/_extra/_static/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "mathjax@$MATHJAX" >/dev/null
npm pack --silent "axe-core@$AXE" >/dev/null
for f in *.tgz; do mkdir -p "x/${f%.tgz}"; tar xzf "$f" -C "x/${f%.tgz}"; done

rm -rf "$dest/mathjax"
mkdir -p "$dest/mathjax"

mj="x/mathjax-$MATHJAX/package"
cp "$mj/LICENSE" "$mj/es5/tex-chtml.js" "$dest/mathjax/"
mkdir -p "$dest/mathjax/output/chtml/fonts" "$dest/mathjax/input/tex"
cp -r "$mj/es5/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
cp -r "$mj/es5/input/tex/extensions" "$dest/mathjax/input/tex/"
cp -r "$mj/es5/ui" "$mj/es5/a11y" "$dest/mathjax/"

axe="$here/tests/browser/vendor/axe-core"
rm -rf "$axe" && mkdir -p "$axe"
cp "x/axe-core-$AXE/package/axe.min.js" "x/axe-core-$AXE/package/LICENSE" "$axe/"
echo "axe-core $AXE (MPL-2.0)" > "$axe/VERSION.txt"

cat > "$dest/VERSIONS.txt" <<TXT
mathjax $MATHJAX (Apache-2.0)
TXT
echo "vendored into $dest"
