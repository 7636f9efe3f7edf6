// 让 ipywidgets 的 html-manager 从本站加载 anywidget 前端与字体，而不是去公共 CDN。
// 必须排在 require.js 之后、embed-amd.js 之前加载（见 _config.yml 的 nb_ipywidgets_js）。
(function () {
  var here = document.currentScript.src.replace(/[^\/]*$/, "");   // …/_static/tfcourse/
  var vendor = here + "../vendor/";
  window.__jupyter_widgets_assets_path__ = vendor + "html-manager/";
  window.requirejs.config({
    paths: {
      anywidget: vendor + "anywidget/index",
      // html-manager 按自己的模块地址推算字体文件的位置：指到本站的副本
      "@jupyter-widgets/html-manager/dist": vendor + "html-manager",
    },
  });
})();
