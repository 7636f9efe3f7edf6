"""生成书里的数据流示意图（SVG）：python tools/make_figures.py，写到 book/figures/。

- qkv-projections.svg（第 2 章）：X → Q、K、V → 打分 → 权重 → 输出，每一步标形状；
- multi-head-split.svg（第 4 章）：(B, T, C) → 拆头 (B, H, T, D) → 各自注意 → 拼接 → W^O。

图以 <img> 引入，不能跟随页面的文字颜色，所以所有文字都放在有底色的方块里，并自带亮、暗两套配色
（prefers-color-scheme）：哪一套配在哪种页面上都读得清；背景透明。viewBox 宽 440，手机上缩到约 350 像素宽时
正文字号约 12 像素，小字约 10 像素。
"""
from __future__ import annotations

import pathlib
from html import escape

OUT = pathlib.Path(__file__).resolve().parents[1] / "book" / "figures"
W = 440

STYLE = """
  text { font-family: "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif;
         fill: #1f2937; font-size: 15px; }
  .small { font-size: 13px; }
  .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13.5px; }
  .b { font-weight: 700; }
  .box { fill: #f8fafc; stroke: #64748b; stroke-width: 1.5; }
  .q { fill: #ffedd5; stroke: #ea580c; } .k { fill: #dbeafe; stroke: #2563eb; } .v { fill: #dcfce7; stroke: #16a34a; }
  .s { fill: #fef9c3; stroke: #ca8a04; } .o { fill: #ede9fe; stroke: #7c3aed; }
  .h0 { fill: #fed7aa; } .h1 { fill: #bfdbfe; } .h2 { fill: #bbf7d0; } .h3 { fill: #e9d5ff; }
  .pill { fill: #f1f5f9; stroke: #94a3b8; stroke-width: 1; }
  .arrow { stroke: #8b95a5; stroke-width: 2; fill: none; marker-end: url(#head); }
  .headfill { fill: #8b95a5; }
  @media (prefers-color-scheme: dark) {
    text { fill: #e5e7eb; }
    .box { fill: #1e293b; stroke: #94a3b8; }
    .q { fill: #431407; stroke: #fb923c; } .k { fill: #172554; stroke: #60a5fa; } .v { fill: #052e16; stroke: #4ade80; }
    .s { fill: #422006; stroke: #facc15; } .o { fill: #2e1065; stroke: #a78bfa; }
    .h0 { fill: #9a3412; } .h1 { fill: #1e40af; } .h2 { fill: #166534; } .h3 { fill: #6b21a8; }
    .pill { fill: #0f172a; stroke: #64748b; }
  }
"""


class Svg:
    def __init__(self, height: int, title: str, desc: str):
        self.h, self.title, self.desc, self.parts = height, title, desc, []

    def box(self, x, y, w, h, cls="", lines=(), rx=6):
        self.parts.append(f'<rect class="box {cls}" x="{x}" y="{y}" width="{w}" height="{h}" rx="{rx}"/>')
        self.text(x + w / 2, y + h / 2, lines)

    def pill(self, cx, cy, lines, w=None):
        n = max(len(t) for t, _ in lines)
        w = w or min(W - 8, 16 + 8.2 * n)
        h = 8 + 17 * len(lines)
        self.parts.append(f'<rect class="pill" x="{cx - w / 2:.1f}" y="{cy - h / 2:.1f}" width="{w:.1f}" height="{h}" rx="{h / 2:.1f}"/>')
        self.text(cx, cy, lines)

    def text(self, cx, cy, lines):
        """lines：[(文字, css 类), …]，以 (cx, cy) 为中心竖排。"""
        lh = 18
        y0 = cy - (len(lines) - 1) * lh / 2
        for i, (t, cls) in enumerate(lines):
            self.parts.append(f'<text x="{cx:.1f}" y="{y0 + i * lh + 5:.1f}" text-anchor="middle" class="{cls}">{escape(t)}</text>')

    def arrow(self, *pts):
        d = " ".join(f"{x},{y}" for x, y in pts)
        self.parts.append(f'<polyline class="arrow" points="{d}"/>')

    def render(self) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {self.h}" width="100%" role="img" '
                f'aria-labelledby="t d">\n<title id="t">{escape(self.title)}</title>\n<desc id="d">{escape(self.desc)}</desc>\n'
                f'<style>{STYLE}</style>\n<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                f'markerHeight="7" orient="auto-start-reverse"><path class="headfill" d="M0,0 L10,5 L0,10 z"/></marker></defs>\n'
                + "\n".join(self.parts) + "\n</svg>\n")


def legend(svg: Svg, y: int, lines: list[str]):
    svg.box(8, y, W - 16, 14 + 18 * len(lines), "", [(t, "small") for t in lines])


def qkv() -> str:
    svg = Svg(600, "自注意力的数据流：Q、K、V 三个投影",
              "词向量 X (T, C) 分别乘 W_q、W_k、W_v 得到 Q (T, D)、K (S, D)、V (S, D)；"
              "Q 乘 K 的转置再除以根号 D 得到打分 (T, S)；每一行做 softmax 得到权重 (T, S)；权重乘 V 得到输出 (T, D)。")
    svg.box(40, 8, 360, 48, "", [("X：每行一个词向量", "b"), ("(T, C)", "mono")])
    cols = [(75, "q", "W_q", "Q 查询", "(T, D)"), (220, "k", "W_k", "K 键", "(S, D)"), (365, "v", "W_v", "V 值", "(S, D)")]
    for cx, cls, w, name, shape in cols:
        svg.arrow((cx, 56), (cx, 132))
        svg.pill(cx, 94, [(f"× {w}", "b"), ("(C, D)", "mono")], w=86)
        svg.box(cx - 58, 134, 116, 48, cls, [(name, "b"), (shape, "mono")])
    svg.arrow((75, 182), (110, 228))
    svg.arrow((220, 182), (185, 228))
    svg.box(40, 230, 215, 50, "s", [("① 打分 Q Kᵀ / √D", "b"), ("(T, S)", "mono")])
    svg.arrow((147, 280), (147, 338))
    svg.pill(147, 309, [("② softmax（每一行）", "")], w=176)
    svg.box(40, 340, 215, 50, "s", [("权重 A：每行和为 1", "b"), ("(T, S)", "mono")])
    svg.arrow((147, 390), (147, 446))
    svg.arrow((365, 182), (365, 446))
    svg.pill(256, 418, [("③ A × V：按权重加值", "")], w=190)
    svg.box(40, 448, 360, 48, "o", [("输出：每个查询位置一个新向量", "b"), ("(T, D)", "mono")])
    legend(svg, 512, ["形状记号：T 查询的位置数，S 键的位置数（自注意力 S = T）；",
                      "C = d_model（词向量维度）；D = d_k（查询、键、值的维度）。",
                      "K 的转置 Kᵀ 是 (D, S)，所以 Q Kᵀ 是 (T, S)。"])
    return svg.render()


def heads() -> str:
    svg = Svg(760, "多头注意力的拆头与拼接",
              "X (B, T, C) 乘 W^Q 得到 (B, T, C)；view 成 (B, T, H, D)，transpose 成 (B, H, T, D)；"
              "每个头各自做缩放点积注意力，权重 (B, H, T, S)，输出 (B, H, T, D)；transpose 回 (B, T, H, D) 再 reshape 成 (B, T, C)，"
              "最后乘 W^O 得到 (B, T, C)。")
    cx = W / 2
    svg.box(60, 8, 320, 46, "", [("X", "b"), ("(B, T, C)", "mono")])
    svg.arrow((cx, 54), (cx, 112))
    svg.pill(cx, 83, [("q_proj：× W^Q，(C, C)", "")], w=210)

    def segmented(y, label, shape):                           # C 维切成 H = 4 段（四种颜色 = 四个头）
        svg.box(60, y, 320, 62, "q", [])
        for h in range(4):
            svg.parts.append(f'<rect class="box h{h}" x="{76 + h * 72}" y="{y + 8}" width="68" height="22" rx="3"/>')
            svg.text(110 + h * 72, y + 19, [(f"头 {h + 1}", "small")])
        svg.text(cx, y + 46, [(f"{label}  {shape}", "mono")])

    segmented(114, "Q", "(B, T, C)")
    svg.arrow((cx, 176), (cx, 232))
    svg.pill(cx, 204, [("view(B, T, H, D)：C 切成 H 段", "")], w=250)
    segmented(234, "", "(B, T, H, D)")
    svg.arrow((cx, 296), (cx, 352))
    svg.pill(cx, 324, [("transpose(1, 2)：头的维度提前", "")], w=250)
    for h in range(4):                                        # 四个头各是一张 (T, D) 的表，叠在一起
        x = 76 + h * 74
        svg.parts.append(f'<rect class="box h{h}" x="{x}" y="354" width="66" height="50" rx="4"/>')
        svg.text(x + 33, 379, [(f"头 {h + 1}", "small"), ("(T, D)", "mono")])
    svg.pill(cx, 420, [("(B, H, T, D)；K、V 同样拆成 (B, H, S, D)", "mono")], w=330)
    svg.arrow((cx, 432), (cx, 500))
    svg.pill(cx, 466, [("每个头各自注意：softmax(QKᵀ/√D) V", ""), ("权重 (B, H, T, S)", "mono")], w=300)
    for h in range(4):
        x = 76 + h * 74
        svg.parts.append(f'<rect class="box h{h}" x="{x}" y="502" width="66" height="34" rx="4"/>')
        svg.text(x + 33, 519, [(f"输出 {h + 1}", "small")])
    svg.arrow((cx, 536), (cx, 590))
    svg.pill(cx, 563, [("拼接：transpose(1, 2) + reshape(B, T, C)", "")], w=330)
    segmented(592, "拼接后", "(B, T, C)")
    svg.arrow((cx, 654), (cx, 676))
    svg.box(60, 678, 320, 30, "o", [("out_proj：× W^O，(C, C) → 输出 (B, T, C)", "small")])
    legend(svg, 716, ["B 批大小，T / S 查询 / 键的位置数，C = d_model，H 头数，D = C / H"])
    return svg.render()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in (("qkv-projections.svg", qkv), ("multi-head-split.svg", heads)):
        (OUT / name).write_text(make(), encoding="utf-8")
        print(f"已写出 {OUT / name}")


if __name__ == "__main__":
    main()
