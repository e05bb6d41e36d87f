// Small behaviours shared by every console page (no framework): the organization switch, the navigation drawer,
// Copy buttons; menus, dialogs, the question before a form that deletes (data-confirm), toasts and skeletons are
// ui.js's. No handler in the markup, which the Content-Security-Policy would refuse.
import {setUpInterface, toast} from "./ui.js";

function setUpPage() {
  document.documentElement.classList.add("js");
  document.addEventListener("change", function (event) {
    const el = event.target;
    if (el.matches && el.matches("select[data-autosubmit], input[type=checkbox][data-autosubmit]")) el.form.requestSubmit();
  });
  // The navigation drawer on narrow screens (console.css): the header's Menu button opens it; the button again,
  // Escape, the backdrop or following a link closes it, and focus goes back to the button.
  function setNav(open, focusButton) {
    const toggle = document.querySelector("[data-nav-toggle]");
    if (!toggle) return;
    document.body.classList.toggle("nav-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) {
      const current = document.querySelector("#sidenav a[aria-current='page']") || document.querySelector("#sidenav a");
      if (current) current.focus();
    } else if (focusButton) {
      toggle.focus();
    }
  }
  document.addEventListener("click", function (event) {
    const toggle = event.target.closest ? event.target.closest("[data-nav-toggle]") : null;
    if (toggle) { setNav(!document.body.classList.contains("nav-open"), true); return; }
    if (!document.body.classList.contains("nav-open")) return;
    if (event.target === document.body) setNav(false, true);  // the backdrop is the body's ::before
    else if (event.target.closest && event.target.closest("#sidenav a")) setNav(false, false);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && document.body.classList.contains("nav-open")) setNav(false, true);
  });
  window.addEventListener("resize", function () {
    if (document.body.classList.contains("nav-open") && window.matchMedia("(min-width: 821px)").matches) setNav(false, false);
  });
  document.addEventListener("click", function (event) {
    const button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    const source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    const text = source.value !== undefined ? source.value : source.textContent;
    if (navigator.clipboard) {
      navigator.clipboard.writeText(text).then(function () {
        button.setAttribute("data-copied", "true");
        const region = document.querySelector("[data-toasts]");
        if (region) toast(region.getAttribute("data-copied-label"), "success");
        setTimeout(function () { button.removeAttribute("data-copied"); }, 1500);
      });
    }
  });
}

setUpPage();
setUpInterface();
