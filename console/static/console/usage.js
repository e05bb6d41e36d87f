// The Usage page's charts: each [data-usage-chart] slot gets the chart of the same key from #usage-charts,
// drawn by the console's own SVG charts (charts.js).
function drawUsage() {
  function draw() {
    const source = document.getElementById("usage-charts");
    if (!source || !window.AgenticCharts) return;
    const charts = JSON.parse(source.textContent);
    document.querySelectorAll("[data-usage-chart]").forEach(function (slot) {
      const spec = charts[slot.getAttribute("data-usage-chart")];
      if (!spec || !spec.x_values.length) return;
      slot.replaceChildren(window.AgenticCharts.render(spec));
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw); else draw();
}

drawUsage();
