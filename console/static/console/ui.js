// The console's small interface pieces (issue 45, "The look"), written by hand for lack of a build step and of a
// dependency worth its weight for four behaviours: action menus (the WAI-ARIA menu button pattern), dialogs
// opened by a button (<dialog> and showModal, which give the focus trap and Escape for free), a styled question
// before a destructive form (form[data-confirm], instead of window.confirm's grey box), and toasts for an
// action's result (Django's messages, drawn by base.html into one live region; toast() for a module's own).

// ---------------------------------------------------------------- menus
// <div data-menu><button data-menu-button aria-haspopup="menu" aria-expanded="false" aria-controls=ID>…</button>
// <div role="menu" id=ID hidden> items with role="menuitem" (buttons, links, a form's submit button) </div></div>
// Enter, Space, ArrowDown open it on the first item, ArrowUp on the last; the arrows, Home and End move, a letter
// jumps to the next item it starts; Escape closes it and gives the focus back to its button; Tab and a click
// outside close it.

function menuItems(menu) {
  return Array.from(menu.querySelectorAll("[role=menuitem]")).filter(function (item) { return !item.disabled; });
}

function openMenu(button, where) {
  const menu = document.getElementById(button.getAttribute("aria-controls"));
  if (!menu) return;
  closeMenus(null);
  menu.hidden = false;
  button.setAttribute("aria-expanded", "true");
  const items = menuItems(menu);
  items.forEach(function (item) { item.tabIndex = -1; });
  const first = where === "last" ? items[items.length - 1] : items[0];
  if (first) first.focus();
}

function closeMenu(button, focusButton) {
  const menu = document.getElementById(button.getAttribute("aria-controls"));
  if (menu) menu.hidden = true;
  button.setAttribute("aria-expanded", "false");
  if (focusButton) button.focus();
}

function closeMenus(except) {
  document.querySelectorAll("[data-menu-button][aria-expanded=true]").forEach(function (button) {
    if (button !== except) closeMenu(button, false);
  });
}

function buttonOf(menu) {
  return document.querySelector("[data-menu-button][aria-controls='" + menu.id + "']");
}

function moveIn(menu, current, key) {
  const items = menuItems(menu);
  if (!items.length) return;
  let at = items.indexOf(current);
  if (key === "ArrowDown") at = (at + 1) % items.length;
  else if (key === "ArrowUp") at = (at - 1 + items.length) % items.length;
  else if (key === "Home") at = 0;
  else if (key === "End") at = items.length - 1;
  else {
    const letter = key.toLowerCase();
    const order = items.slice(at + 1).concat(items.slice(0, at + 1));
    const next = order.find(function (item) { return item.textContent.trim().toLowerCase().startsWith(letter); });
    if (!next) return;
    at = items.indexOf(next);
  }
  items[at].focus();
}

function setUpMenus() {
  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-menu-button]");
    if (button) {
      if (button.getAttribute("aria-expanded") === "true") closeMenu(button, true);
      else openMenu(button, "first");
      return;
    }
    const item = event.target.closest("[role=menu] [role=menuitem]");
    if (item) {
      // The item acts (a link follows, a form submits, a dialog opens); the menu closes behind it.
      const menu = item.closest("[role=menu]");
      const owner = buttonOf(menu);
      if (owner) closeMenu(owner, !item.hasAttribute("data-dialog-open") && !item.closest("form"));
      return;
    }
    if (!event.target.closest("[role=menu]")) closeMenus(null);
  });
  document.addEventListener("keydown", function (event) {
    const button = event.target.closest ? event.target.closest("[data-menu-button]") : null;
    if (button && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      openMenu(button, event.key === "ArrowUp" ? "last" : "first");
      return;
    }
    const menu = event.target.closest ? event.target.closest("[role=menu]") : null;
    if (!menu) return;
    const owner = buttonOf(menu);
    if (event.key === "Escape") {
      event.preventDefault();
      if (owner) closeMenu(owner, true);
    } else if (event.key === "Tab") {
      if (owner) closeMenu(owner, false);
    } else if (["ArrowDown", "ArrowUp", "Home", "End"].includes(event.key) ||
               (event.key.length === 1 && /\S/.test(event.key) && !event.ctrlKey && !event.metaKey && !event.altKey)) {
      event.preventDefault();
      moveIn(menu, event.target.closest("[role=menuitem]"), event.key);
    }
  });
  // Focus leaving an open menu (a click elsewhere, the page's own focus moves) closes it.
  document.addEventListener("focusin", function (event) {
    if (!event.target.closest) return;
    const inside = event.target.closest("[role=menu], [data-menu-button]");
    document.querySelectorAll("[data-menu-button][aria-expanded=true]").forEach(function (button) {
      const menu = document.getElementById(button.getAttribute("aria-controls"));
      if (!inside || (inside !== button && inside !== menu)) closeMenu(button, false);
    });
  });
}

// ---------------------------------------------------------------- dialogs
// A button with data-dialog-open=ID opens <dialog id=ID> as a modal; [data-dialog-close] inside closes it. Focus
// goes back to where the person was: the button, or the menu button when the opener was an item of a menu
// (hidden by then).

function returnTarget(opener) {
  const menu = opener && opener.closest ? opener.closest("[role=menu]") : null;
  return (menu && buttonOf(menu)) || opener;
}

function openDialog(dialog, opener) {
  const back = returnTarget(opener);
  dialog.addEventListener("close", function () {
    if (back && document.contains(back)) back.focus();
  }, {once: true});
  dialog.showModal();
  const first = dialog.querySelector("[autofocus], input:not([type=hidden]), textarea, select");
  if (first) first.focus();
}

function setUpDialogs() {
  document.addEventListener("click", function (event) {
    const opener = event.target.closest("[data-dialog-open]");
    if (opener) {
      const dialog = document.getElementById(opener.getAttribute("data-dialog-open"));
      if (dialog && typeof dialog.showModal === "function") {
        event.preventDefault();
        openDialog(dialog, opener);
      }
      return;
    }
    const closer = event.target.closest("[data-dialog-close]");
    if (closer) closer.closest("dialog").close("cancel");
    // A click on the backdrop (the dialog element itself, outside its box) closes it too.
    if (event.target.tagName === "DIALOG" && event.target.open) {
      const box = event.target.getBoundingClientRect();
      const inside = event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
      if (!inside) event.target.close("cancel");
    }
  });
}

// ---------------------------------------------------------------- confirmations
// form[data-confirm="Delete this bot?"] asks in the page's one confirmation dialog (base.html), its confirming
// button labelled data-confirm-button (else the form's own button's words) in the danger colour, with the
// optional data-confirm-detail under the question. Cancel, Escape and the backdrop keep the form unsent.

function setUpConfirm() {
  const dialog = document.querySelector("[data-confirm-dialog]");
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.matches || !form.matches("form[data-confirm]")) return;
    if (form.hasAttribute("data-confirmed")) { form.removeAttribute("data-confirmed"); return; }
    event.preventDefault();
    const submitter = event.submitter || form.querySelector("[type=submit], button:not([type])");
    if (!dialog || typeof dialog.showModal !== "function") {
      // Without <dialog> (a very old browser): the browser's own question, so a deletion is never unasked.
      if (window.confirm(form.getAttribute("data-confirm"))) { form.setAttribute("data-confirmed", ""); form.requestSubmit(submitter); }
      return;
    }
    dialog.querySelector("[data-confirm-question]").textContent = form.getAttribute("data-confirm");
    const detail = dialog.querySelector("[data-confirm-detail]");
    detail.textContent = form.getAttribute("data-confirm-detail") || "";
    detail.hidden = !detail.textContent;
    const yes = dialog.querySelector("[data-confirm-yes]");
    yes.textContent = form.getAttribute("data-confirm-button") || (submitter && submitter.textContent.trim().replace(/…$/, "")) || yes.getAttribute("data-default");
    dialog.returnValue = "";
    dialog.addEventListener("close", function () {
      if (dialog.returnValue !== "confirm") return;
      form.setAttribute("data-confirmed", "");
      form.requestSubmit(submitter && submitter.form === form ? submitter : undefined);
    }, {once: true});
    openDialog(dialog, submitter);
    dialog.querySelector("[data-confirm-no]").focus();  // the safe answer first: Enter by habit deletes nothing
  });
}

// ---------------------------------------------------------------- toasts
// The region (base.html, [data-toasts]) holds the page's messages. A success or notice lets clicks through to what
// it covers (console.css: it never stands in the way of the page's controls, fixed ones like the chat's head and
// composer included) and leaves 6 s after the person first acts on the page (a move, a key, a touch) — so one who
// looked away during a slow load still reads it; Escape sends it at once. An error stays until its Dismiss button
// (it takes clicks: its text may be long and need scrolling).

const LINGER_MS = 6000;
let seen = false;

function dismiss(note) {
  if (!note.isConnected || note.classList.contains("leaving")) return;
  note.classList.add("leaving");
  const gone = function () { note.remove(); };
  note.addEventListener("animationend", gone, {once: true});
  setTimeout(gone, 400);  // reduced motion (no animation) or a hidden tab (no animation frame): it goes all the same
}

function arm(note, region) {
  if (!note.classList.contains("flash-error")) {
    note._start = function () { setTimeout(function () { dismiss(note); }, LINGER_MS); };
    if (seen) note._start();
    return;
  }
  const close = document.createElement("button");
  close.type = "button";
  close.className = "toast-dismiss";
  close.setAttribute("data-toast-dismiss", "");
  close.setAttribute("aria-label", region.getAttribute("data-dismiss-label") || "Dismiss");
  close.textContent = "×";
  close.addEventListener("click", function () { dismiss(note); });
  note.appendChild(close);
}

function setUpToasts() {
  const region = document.querySelector("[data-toasts]");
  if (!region) return;
  region.querySelectorAll("[data-toast]").forEach(function (note) { arm(note, region); });
  const first = function () {
    if (seen) return;
    seen = true;
    region.querySelectorAll("[data-toast]").forEach(function (note) { if (note._start) note._start(); });
  };
  ["pointermove", "pointerdown", "keydown", "touchstart", "wheel"].forEach(function (kind) {
    window.addEventListener(kind, first, {once: true, passive: true});
  });
  document.addEventListener("keydown", function (event) {
    // Escape first closes what is open (a menu, a dialog, the drawers); with nothing open it sends the successes.
    if (event.key !== "Escape" || event.defaultPrevented || document.querySelector("dialog[open]")) return;
    region.querySelectorAll("[data-toast]:not(.flash-error)").forEach(dismiss);
  });
}

// A module's own result ("Link copied"): kind is "success", "info" or "error".
export function toast(text, kind) {
  const region = document.querySelector("[data-toasts]");
  if (!region) return;
  const list = region.querySelector("ul");
  const item = document.createElement("li");
  item.className = "toast flash-" + (kind || "success");
  item.setAttribute("data-toast", "");
  const words = document.createElement("span");
  words.textContent = text;
  item.appendChild(words);
  list.appendChild(item);
  seen = true;  // a toast answering what the person just did: they are looking
  arm(item, region);
}

// ---------------------------------------------------------------- skeletons
// [data-skeleton-on-leave=SELECTOR] on a link or a GET form: following it draws a skeleton into SELECTOR at once
// (the chat's list and transcript), so a slow page change shows that it is under way.

function setUpSkeletons() {
  function show(selector) {
    const target = document.querySelector(selector);
    const template = document.getElementById(target && target.getAttribute("data-skeleton-template"));
    if (!target || !template) return;
    target.setAttribute("aria-busy", "true");
    target.replaceChildren(template.content.cloneNode(true));
  }
  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = event.target.closest ? event.target.closest("a[data-skeleton-on-leave]") : null;
    if (link && !link.hasAttribute("download")) show(link.getAttribute("data-skeleton-on-leave"));
  });
  // A page the browser brings back from its cache (Back) would keep the skeleton drawn on leaving: load it anew.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted && document.querySelector("[data-skeleton-template][aria-busy=true]")) location.reload();
  });
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (event.defaultPrevented || !form.matches("form[data-skeleton-on-leave]")) return;
    show(form.getAttribute("data-skeleton-on-leave"));
  });
}

export function setUpInterface() {
  setUpMenus();
  setUpDialogs();
  setUpConfirm();
  setUpToasts();
  setUpSkeletons();
}
