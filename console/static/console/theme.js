// The console's theme: the system's (prefers-color-scheme) until the person picks one with the header's toggle,
// then that one, remembered in this browser. A classic script in <head>, run before the first paint so a dark
// page never flashes light (an inline script would be refused by the Content-Security-Policy).
(function () {
  "use strict";
  var KEY = "agenticos-theme";
  var root = document.documentElement;
  function stored() {
    try { var v = localStorage.getItem(KEY); return v === "light" || v === "dark" ? v : null; } catch (e) { return null; }
  }
  function systemDark() { return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches); }
  function current() { return stored() || (systemDark() ? "dark" : "light"); }
  function apply() {
    var chosen = stored();
    if (chosen) root.setAttribute("data-theme", chosen); else root.removeAttribute("data-theme");
    document.querySelectorAll("[data-theme-toggle]").forEach(function (b) {
      b.setAttribute("aria-pressed", current() === "dark" ? "true" : "false");
    });
  }
  apply();
  document.addEventListener("DOMContentLoaded", apply);
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-theme-toggle]") : null;
    if (!button) return;
    try { localStorage.setItem(KEY, current() === "dark" ? "light" : "dark"); } catch (e) { /* private mode: this page only */ }
    apply();
  });
  if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", apply);
})();
