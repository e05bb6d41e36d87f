// The console's theme: the system's (prefers-color-scheme) until the person picks one with the header's toggle,
// then that one — remembered for the person (posted to the server, which renders it as data-theme-person on every
// page, so another browser they sign in from opens in it) and in this browser. A classic script in <head>, run
// before the first paint so a dark page never flashes light (an inline script would be refused by the Content-Security-Policy).
(function () {
  "use strict";
  var KEY = "agenticos-theme";
  var root = document.documentElement;
  function stored() {
    try { var v = localStorage.getItem(KEY); return v === "light" || v === "dark" ? v : null; } catch (e) { return null; }
  }
  function systemDark() { return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches); }
  // The person's own choice, from the server: "light", "dark", "" (follow the system); absent when signed out.
  var said = root.getAttribute("data-theme-person");
  var person = said === "light" || said === "dark" ? said : null;
  function picked() { return stored() || person; }
  function current() { return picked() || (systemDark() ? "dark" : "light"); }
  function apply() {
    var chosen = picked();
    if (chosen) root.setAttribute("data-theme", chosen); else root.removeAttribute("data-theme");
    document.querySelectorAll("[data-theme-toggle]").forEach(function (b) {
      b.setAttribute("aria-pressed", current() === "dark" ? "true" : "false");
    });
  }
  // A toggle whose POST had not landed when the next page was asked for (it left first): the choice made here wins
  // over the page's older word, and is sent again once the page is there.
  var PENDING = "agenticos-theme-pending";
  var pending = null;
  try { pending = localStorage.getItem(PENDING); } catch (e) { /* private mode */ }
  if (said !== null) {  // signed in: this browser follows the person's choice, "follow the system" included
    if (pending === "light" || pending === "dark") person = pending;
    try { if (person) localStorage.setItem(KEY, person); else localStorage.removeItem(KEY); } catch (e) { /* private mode */ }
  }
  function remember(url, theme) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (!url || !meta) return;  // signed out: this browser only
    try { localStorage.setItem(PENDING, theme); } catch (e) { /* private mode */ }
    fetch(url, {method: "POST", credentials: "same-origin", keepalive: true,
                headers: {"X-CSRFToken": meta.content, "Content-Type": "application/x-www-form-urlencoded"},
                body: "theme=" + encodeURIComponent(theme)}).then(function (response) {
      try { if (response.ok && localStorage.getItem(PENDING) === theme) localStorage.removeItem(PENDING); } catch (e) { /* private mode */ }
    }).catch(function () { /* kept in this browser, sent again on the next page */ });
  }
  apply();
  document.addEventListener("DOMContentLoaded", function () {
    apply();
    var toggle = document.querySelector("[data-theme-url]");
    if (pending && said !== null && toggle) remember(toggle.getAttribute("data-theme-url"), pending);
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-theme-toggle]") : null;
    if (!button) return;
    var next = current() === "dark" ? "light" : "dark";
    try { localStorage.setItem(KEY, next); } catch (e) { /* private mode: this page only */ }
    person = next;
    apply();
    remember(button.getAttribute("data-theme-url"), next);
  });
  if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", apply);
})();
