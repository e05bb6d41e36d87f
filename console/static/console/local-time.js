// <time data-local-time datetime="2026-12-05T07:30:00Z"> shown in the viewer's own timezone, as
// "YYYY-MM-DD HH:MM <zone>". The server's text (another timezone, e.g. a trigger's) stays as the title, and is
// what people without scripts see. No library: Intl.DateTimeFormat knows the browser's zone.
function showLocalTimes() {

  function zone() {
    try {
      return Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    } catch (e) {
      return "";
    }
  }

  function render(el, tz) {
    const instant = new Date(el.getAttribute("datetime"));
    if (!tz || isNaN(instant.getTime())) return;
    const parts = {};
    new Intl.DateTimeFormat("en-US", {
      timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", hourCycle: "h23",
    }).formatToParts(instant).forEach(function (part) { parts[part.type] = part.value; });
    if (!el.title) el.title = el.textContent.replace(/\s+/g, " ").trim();
    const label = document.createElement("span");
    label.className = "muted";
    label.textContent = tz;
    el.textContent = parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute + " ";
    el.appendChild(label);
    el.setAttribute("data-local-zone", tz);
  }

  function renderAll(root) {
    const tz = zone();
    (root || document).querySelectorAll("time[data-local-time]").forEach(function (el) { render(el, tz); });
  }

  renderAll(document);
  document.addEventListener("agenticos:refreshed", function (event) { renderAll(event.detail.el); });
}

showLocalTimes();
