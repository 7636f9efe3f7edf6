// 本书网站外壳的小脚本（由 book/_ext/tfcourse_site.py 加载到每一页）。
//
// 侧栏按钮：主题（pydata-sphinx-theme 与 sphinx-book-theme）只把点击处理程序绑在页面上的第一个
// .primary-toggle / .secondary-toggle 上，而那个按钮在本书的版式里是隐藏的；读者看得见的 ☰ 和「本页目录」
// 按钮因此点了没反应（手机、平板上打不开侧栏，桌面上收不起左栏）。这里让看得见的按钮转而点击主题绑定的那个：
// 窄屏时打开侧栏对话框，宽屏时收起/展开左栏，行为与主题设计的一致。
(function () {
  "use strict";

  function delegate(selector) {
    var buttons = Array.prototype.slice.call(document.querySelectorAll(selector));
    if (buttons.length < 2) return;
    var bound = buttons[0];
    buttons.slice(1).forEach(function (button) {
      button.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        bound.click();
        syncExpanded();
      });
    });
  }

  // 宽屏时左栏是收起还是展开：写进按钮的 aria-expanded，读屏软件能读出来
  function syncExpanded() {
    var sidebar = document.getElementById("pst-primary-sidebar");
    if (!sidebar) return;
    var wide = window.matchMedia("(min-width: 992px)").matches;
    var open = !sidebar.classList.contains("pst-sidebar-hidden");
    document.querySelectorAll(".primary-toggle").forEach(function (b) {
      b.setAttribute("aria-controls", "pst-primary-sidebar");
      if (wide) b.setAttribute("aria-expanded", String(open));
      else b.removeAttribute("aria-expanded");      // 窄屏时侧栏是一个对话框，打开后焦点就在里面
    });
  }

  // 主题与 sphinx-togglebutton 写死的几条英文提示（后者由脚本在页面加载后才插入）
  var ENGLISH = {
    "Toggle hidden content": "显示或隐藏折叠的内容",
    "Main": "章节目录",
    "Page": "本页目录",
    "Search this book...": "在本书中搜索…",
    "Link to this heading": "这一节的链接",
  };
  function relabel() {
    ["aria-label", "title", "placeholder"].forEach(function (attr) {
      document.querySelectorAll("[" + attr + "]").forEach(function (el) {
        var zh = ENGLISH[el.getAttribute(attr)];
        if (zh) el.setAttribute(attr, zh);
      });
    });
  }

  // 横向放不下、在自己的框里滚动的输出表格与公式：让键盘也能选中它（Tab），再用方向键滚动（WCAG 2.1.1）。
  // 放得下的不加，免得 Tab 键停在一个什么也不做的地方；窗口变宽变窄时重新判断。
  var SCROLLERS = ".bd-article .cell_output .output, .bd-article .cell_output table, div.math > mjx-container";
  function focusableScrollers() {
    document.querySelectorAll(SCROLLERS).forEach(function (el) {
      var overflow = el.scrollWidth > el.clientWidth + 1;
      if (overflow && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-tfc-scroll", "");
      } else if (!overflow && el.hasAttribute("data-tfc-scroll")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-tfc-scroll");
      }
    });
  }

  function init() {
    focusableScrollers();
    window.addEventListener("load", focusableScrollers);
    window.addEventListener("resize", focusableScrollers);
    relabel();
    setTimeout(relabel, 0);                           // sphinx-togglebutton 在 DOMContentLoaded 时才插入按钮
    window.addEventListener("load", relabel);
    delegate(".primary-toggle");
    delegate(".secondary-toggle");
    syncExpanded();
    window.addEventListener("resize", syncExpanded);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
