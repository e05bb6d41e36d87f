// Native charts: the chart JSON a create_chart call returns (capabilities/charts) drawn as SVG.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = ["#2f6fde", "#e0742b", "#2b9e6b", "#b5407a", "#7a5bd6", "#c9a227", "#3a9fb5", "#8c5a3c",
                "#5e7d2a", "#d14d4d", "#4d6bd1", "#7d7d7d"];

  function el(name, attrs, text) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fmt(v) {
    var n = Number(v);
    if (!isFinite(n)) return "";
    if (Math.abs(n) >= 1000) return n.toLocaleString();
    return String(Math.round(n * 100) / 100);
  }

  // Round ticks for an axis from `low` to `high` (both included): about `count` steps of 1, 2 or 5 times a power
  // of ten (10/20/30, never 10.25/20.5/30.75). Hand-written: the console draws its charts without a library.
  // `whole`: the values are counts, so no tick falls between two whole numbers.
  function niceTicks(low, high, count, whole) {
    count = count || 4;
    if (!(high > low)) high = low + 1;
    var raw = (high - low) / count, power = Math.pow(10, Math.floor(Math.log10(raw))), step = power * 10;
    [1, 2, 5, 10].some(function (m) { if (m * power >= raw) { step = m * power; return true; } return false; });
    if (whole) step = Math.max(1, step);
    var start = Math.floor(low / step + 1e-9) * step, ticks = [];
    for (var v = start; v < high + step - 1e-9 * step; v += step) ticks.push(Number(v.toPrecision(12)));
    if (ticks.length < 2) ticks.push(Number((start + step).toPrecision(12)));
    return ticks;
  }

  function pie(svg, spec, W, H) {
    var s = spec.series[0] || {values: []};
    var total = s.values.reduce(function (a, b) { return a + Math.max(0, b); }, 0) || 1;
    var cx = W / 2 - 60, cy = H / 2 + 10, r = Math.min(W, H) / 2 - 40, angle = -Math.PI / 2;
    s.values.forEach(function (v, i) {
      var slice = Math.max(0, v) / total * Math.PI * 2;
      var x1 = cx + r * Math.cos(angle), y1 = cy + r * Math.sin(angle);
      angle += slice;
      var x2 = cx + r * Math.cos(angle), y2 = cy + r * Math.sin(angle);
      var large = slice > Math.PI ? 1 : 0;
      var path = el("path", {d: "M" + cx + "," + cy + " L" + x1 + "," + y1 + " A" + r + "," + r + " 0 " + large +
        " 1 " + x2 + "," + y2 + " Z", fill: COLORS[i % COLORS.length], stroke: "#fff"});
      path.appendChild(el("title", {}, spec.x_values[i] + ": " + fmt(v)));
      svg.appendChild(path);
      svg.appendChild(el("rect", {x: W - 110, y: 40 + i * 18, width: 10, height: 10, fill: COLORS[i % COLORS.length]}));
      svg.appendChild(el("text", {x: W - 95, y: 49 + i * 18, "font-size": 11}, String(spec.x_values[i])));
    });
  }

  function cartesian(svg, spec, W, H) {
    var type = spec.chart_type;
    var left = 48, right = 16, top = 36, bottom = 48;
    var pw = W - left - right, ph = H - top - bottom;
    var all = [];
    spec.series.forEach(function (s) { all = all.concat(s.values); });
    var whole = all.every(function (v) { return Number.isInteger(Number(v)); });
    var ticks = niceTicks(Math.min.apply(null, all.concat([0])), Math.max.apply(null, all.concat([0])), 4, whole);
    var min = ticks[0], max = ticks[ticks.length - 1];
    var decimals = Math.max(0, -Math.floor(Math.log10(ticks[1] - ticks[0]) + 1e-9));
    var n = spec.x_values.length;
    function y(v) { return top + ph - (v - min) / (max - min) * ph; }
    // Bars sit in bands; points of a line sit in bands too, so the first and last labels are whole, not cut by the edge.
    function x(i) { return left + (n <= 1 ? pw / 2 : (type === "bar" || n <= 2 ? (i + 0.5) * pw / n : i * pw / (n - 1))); }
    var grid = el("g", {class: "chart-grid"});
    ticks.forEach(function (v) {
      var yy = y(v);
      grid.appendChild(el("line", {x1: left, x2: W - right, y1: yy, y2: yy, stroke: "#e3e6ea"}));
      grid.appendChild(el("text", {x: left - 6, y: yy + 4, "text-anchor": "end", "font-size": 10, fill: "#555"},
        Math.abs(v) >= 1000 ? v.toLocaleString() : v.toFixed(decimals)));
    });
    svg.appendChild(grid);
    // As many whole labels as fit side by side (a date is never cut or overlapped); every step-th one is shown.
    var longest = spec.x_values.reduce(function (m, label) { return Math.max(m, String(label).length); }, 1);
    var fit = Math.max(1, Math.floor(pw / (longest * 6 + 10)));
    var step = Math.max(1, Math.ceil(n / fit));
    spec.x_values.forEach(function (label, i) {
      if (i % step) return;
      var anchor = "middle";
      if (type !== "bar" && n > 2 && i === 0) anchor = "start";
      if (type !== "bar" && n > 2 && i === n - 1) anchor = "end";
      grid.appendChild(el("text", {x: x(i), y: H - bottom + 16, "text-anchor": anchor, "font-size": 10, fill: "#555"},
        String(label)));
    });
    var k = spec.series.length;
    spec.series.forEach(function (s, si) {
      var color = COLORS[si % COLORS.length];
      if (type === "bar") {
        var band = pw / n, bw = band * 0.8 / k;
        s.values.forEach(function (v, i) {
          var x0 = left + i * band + band * 0.1 + si * bw, y0 = y(Math.max(v, 0)), y1 = y(Math.min(v, 0));
          var rect = el("rect", {x: x0, y: y0, width: Math.max(1, bw - 1), height: v ? Math.max(1, y1 - y0) : 0, fill: color});  // a quiet day is no bar
          rect.appendChild(el("title", {}, s.name + " · " + spec.x_values[i] + ": " + fmt(v)));
          svg.appendChild(rect);
        });
      } else if (type === "scatter") {
        s.values.forEach(function (v, i) {
          var dot = el("circle", {cx: x(i), cy: y(v), r: 4, fill: color});
          dot.appendChild(el("title", {}, s.name + " · " + spec.x_values[i] + ": " + fmt(v)));
          svg.appendChild(dot);
        });
      } else {
        var points = s.values.map(function (v, i) { return x(i) + "," + y(v); });
        if (type === "area") {
          svg.appendChild(el("polygon", {points: x(0) + "," + y(Math.max(min, 0)) + " " + points.join(" ") + " " +
            x(n - 1) + "," + y(Math.max(min, 0)), fill: color, "fill-opacity": 0.25}));
        }
        svg.appendChild(el("polyline", {points: points.join(" "), fill: "none", stroke: color, "stroke-width": 2}));
        // Each value is a dot too: one point alone is seen, and two are two measures, not a ramp between them.
        s.values.forEach(function (v, i) {
          var dot = el("circle", {cx: x(i), cy: y(v), r: 3, fill: color});
          dot.appendChild(el("title", {}, s.name + " · " + spec.x_values[i] + ": " + fmt(v)));
          svg.appendChild(dot);
        });
      }
      svg.appendChild(el("rect", {x: left + si * 120, y: 22, width: 10, height: 10, fill: color}));
      svg.appendChild(el("text", {x: left + si * 120 + 14, y: 31, "font-size": 11}, s.name));
    });
    if (spec.x_label) svg.appendChild(el("text", {x: left + pw / 2, y: H - 8, "text-anchor": "middle", "font-size": 11}, spec.x_label));
    if (spec.y_label) svg.appendChild(el("text", {x: 12, y: top + ph / 2, "font-size": 11,
      transform: "rotate(-90 12 " + (top + ph / 2) + ")", "text-anchor": "middle"}, spec.y_label));
  }

  function render(spec) {
    var W = 560, H = 300;
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, role: "img", class: "chart-svg",
                         "data-chart-type": spec.chart_type || "bar"});
    svg.appendChild(el("title", {}, spec.title || ""));
    svg.appendChild(el("text", {x: 8, y: 16, "font-size": 13, "font-weight": "bold"}, spec.title || ""));
    if (!spec.series || !spec.x_values) return svg;
    if (spec.chart_type === "pie") pie(svg, spec, W, H); else cartesian(svg, spec, W, H);
    return svg;
  }

  function isChart(value) {
    return !!value && typeof value === "object" && value.kind === "chart" && Array.isArray(value.series);
  }

  window.AgenticCharts = {render: render, isChart: isChart, niceTicks: niceTicks};
})();
