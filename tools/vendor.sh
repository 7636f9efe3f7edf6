#!/usr/bin/env bash
# 重新取得网站自带的前端文件（不在正常构建中运行；文件已提交在 book/_extra/_static/vendor）。
# 网站不向外部 CDN 发任何请求：require.js、ipywidgets 的 html-manager、anywidget 前端与 MathJax 都由网站自己提供。
# anywidget 的 npm 版本必须与 requirements.txt 里的 PyPI 版本一致。
set -euo pipefail
REQUIREJS=2.3.8
HTML_MANAGER=1.0.15
ANYWIDGET=0.11.0
MATHJAX=3.2.2

here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/book/_extra/_static/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "requirejs@$REQUIREJS" "@jupyter-widgets/html-manager@$HTML_MANAGER" \
  "anywidget@$ANYWIDGET" "mathjax@$MATHJAX" >/dev/null
for f in *.tgz; do mkdir -p "x/${f%.tgz}"; tar xzf "$f" -C "x/${f%.tgz}"; done

rm -rf "$dest/requirejs" "$dest/html-manager" "$dest/anywidget" "$dest/mathjax"
mkdir -p "$dest/requirejs" "$dest/html-manager" "$dest/anywidget" "$dest/mathjax"

cp "x/requirejs-$REQUIREJS/package/require.js" "$dest/requirejs/"

hm="x/jupyter-widgets-html-manager-$HTML_MANAGER/package"
cp "$hm/dist/embed-amd.js" "$hm/dist"/*.woff2 "$hm/dist"/*.woff "$hm/dist/embed.js.LICENSE.txt" "$dest/html-manager/"

cp "x/anywidget-$ANYWIDGET/package/dist/index.js" "x/anywidget-$ANYWIDGET/package/LICENSE" "$dest/anywidget/"

mj="x/mathjax-$MATHJAX/package"
cp "$mj/LICENSE" "$mj/es5/tex-chtml.js" "$dest/mathjax/"
mkdir -p "$dest/mathjax/output/chtml/fonts" "$dest/mathjax/input/tex"
cp -r "$mj/es5/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
cp -r "$mj/es5/input/tex/extensions" "$dest/mathjax/input/tex/"
cp -r "$mj/es5/ui" "$mj/es5/a11y" "$dest/mathjax/"

cat > "$dest/VERSIONS.txt" <<TXT
requirejs $REQUIREJS (MIT)
@jupyter-widgets/html-manager $HTML_MANAGER (BSD-3-Clause)
anywidget $ANYWIDGET (MIT)
mathjax $MATHJAX (Apache-2.0)
TXT
echo "vendored into $dest"
