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

// The console's one date format (issue 45): <time datetime data-when="relative"> in a list reads "5 minutes ago",
// <time datetime data-when="full"> in a detail reads the date and time in the person's locale and time zone; both
// carry the full form (with the zone) as their title, shown on hover. The server's "YYYY-MM-DD HH:MM" stays for
// people without scripts. Intl (RelativeTimeFormat, DateTimeFormat) does the words: no library.
function showWhen() {
  const page = (document.documentElement.lang || "").toLowerCase();
  const browser = (navigator.language || "").toLowerCase();
  // The browser's own variant (en-GB) when it speaks the page's language; the page's language otherwise.
  const locale = browser && page && browser.split("-")[0] === page.split("-")[0] ? navigator.language : (page || undefined);
  const full = new Intl.DateTimeFormat(locale, {year: "numeric", month: "short", day: "numeric",
                                                hour: "2-digit", minute: "2-digit", timeZoneName: "short"});
  const relative = new Intl.RelativeTimeFormat(locale, {numeric: "auto"});
  const UNITS = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60]];

  function ago(instant, now) {
    const seconds = (instant.getTime() - now) / 1000;
    for (const [unit, size] of UNITS) {
      if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
    }
    return relative.format(0, "second");
  }

  function render(el, now) {
    const instant = new Date(el.getAttribute("datetime"));
    if (isNaN(instant.getTime())) return;
    el.title = full.format(instant);
    el.textContent = el.getAttribute("data-when") === "relative" ? ago(instant, now) : full.format(instant);
  }

  function renderAll(root) {
    const now = Date.now();
    (root || document).querySelectorAll("time[data-when]").forEach(function (el) { render(el, now); });
  }

  renderAll(document);
  document.addEventListener("agenticos:refreshed", function (event) { renderAll(event.detail.el); });
  setInterval(function () { renderAll(document); }, 60000);
}

showLocalTimes();
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", showWhen); else showWhen();
