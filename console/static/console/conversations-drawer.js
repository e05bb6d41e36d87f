// On a phone the conversation list is a drawer (issue 45 §8), not stacked above the chat: the "Conversations"
// button in the chat's head opens it over the page; its close button, Escape or following a link closes it. A
// search keeps it open (the person is looking in it). Without script the list stays stacked, as it was.
const layout = document.querySelector(".chat-layout");
const list = layout && layout.querySelector(".conversations");
const toggle = layout && layout.querySelector("[data-conversations-toggle]");
const close = list && list.querySelector("[data-conversations-close]");

function set(open, focus) {
  list.toggleAttribute("data-open", open);
  toggle.setAttribute("aria-expanded", String(open));
  if (!focus) return;
  if (open) (close || list).focus();
  else toggle.focus();
}

if (layout && list && toggle && close) {
  layout.classList.add("has-drawer");
  toggle.addEventListener("click", function () { set(!list.hasAttribute("data-open"), true); });
  close.addEventListener("click", function () { set(false, true); });
  document.addEventListener("keydown", function (event) {
    // An item's open "…" menu or one of its dialogs takes Escape first (ui.js): the drawer stays, so the focus
    // that goes back to the menu's button has somewhere to go.
    if (event.key !== "Escape" || !list.hasAttribute("data-open") || event.defaultPrevented) return;
    if ((event.target.closest && event.target.closest("[role=menu]")) || document.querySelector("dialog[open]")) return;
    set(false, true);
  });
  if (new URLSearchParams(location.search).get("q")) set(true, false);
}
