import {csrf} from "./dom.js";

// The Toolbox: a compact list (name, one line, on/off) with one capability's settings beside it, search, one
// Save for the draft (each changed capability goes to its own endpoint, answered in JSON; problems are shown at
// their setting, never under a bare "saved"), and a warning before leaving with unsaved changes.
function setUpToolbox() {
  const toolbox = document.querySelector("[data-toolbox]");
  const input = document.querySelector("[data-toolbox-search]");
  const group = document.querySelector("[data-advanced-group]");
  const groupRow = document.querySelector("[data-toolbox-group]");
  const savebar = document.querySelector("[data-toolbox-savebar]");
  const status = document.querySelector("[data-toolbox-status]");
  const stringsNode = document.getElementById("toolbox-strings");
  const strings = stringsNode ? JSON.parse(stringsNode.textContent) : {};
  const dirty = new Set(); // forms with changes not saved yet
  if (!toolbox) return;

  function article(id) { return document.getElementById("cap-" + id); }
  function row(id) { return document.querySelector('[data-toolbox-row="' + id + '"]'); }

  // ---- one capability at a time beside the list
  function select(id, focus) {
    const chosen = article(id);
    if (!chosen) return;
    document.querySelectorAll("[data-capability]").forEach(function (card) { card.hidden = card !== chosen; });
    document.querySelectorAll("[data-toolbox-row]").forEach(function (r) {
      r.setAttribute("aria-current", r.getAttribute("data-toolbox-row") === id ? "true" : "false");
    });
    if (group) group.open = group.contains(chosen);
    if (focus) chosen.scrollIntoView({block: "nearest"});
  }

  function fromHash() {
    const match = /^#cap-(.+)$/.exec(location.hash);
    return match && article(match[1]) ? match[1] : null;
  }

  const first = document.querySelector("[data-toolbox-row]");
  select(fromHash() || (first && first.getAttribute("data-toolbox-row")), false);
  window.addEventListener("hashchange", function () { const id = fromHash(); if (id) select(id, true); });

  toolbox.addEventListener("click", function (event) {
    const link = event.target.closest && event.target.closest("[data-toolbox-open]");
    if (!link) return;
    event.preventDefault();
    select(link.getAttribute("data-toolbox-open"), true);
    history.replaceState(null, "", "#cap-" + link.getAttribute("data-toolbox-open"));
  });

  // ---- search the list
  if (input) {
    input.addEventListener("input", function () {
      const q = input.value.trim().toLowerCase();
      let advancedShown = false;
      let shownFirst = null;
      document.querySelectorAll("[data-toolbox-row]").forEach(function (r) {
        r.hidden = !!q && r.getAttribute("data-search").indexOf(q) < 0;
        if (!r.hidden && !shownFirst) shownFirst = r;
        const card = article(r.getAttribute("data-toolbox-row"));
        if (!r.hidden && group && card && group.contains(card)) advancedShown = true;
      });
      if (groupRow) {
        groupRow.hidden = !!q && !advancedShown;
        if (q && advancedShown) groupRow.open = true; // a match in Advanced is never folded away
      }
      // A category with no match left is hidden with its heading.
      document.querySelectorAll("[data-toolbox-category]").forEach(function (cat) {
        cat.hidden = !!q && !cat.querySelector("[data-toolbox-row]:not([hidden])");
      });
      if (q && shownFirst) select(shownFirst.getAttribute("data-toolbox-row"), false);
    });
  }

  // ---- on/off in the list is the capability's own switch
  toolbox.addEventListener("change", function (event) {
    const target = event.target;
    if (target.matches("[data-toolbox-toggle]")) {
      const id = target.getAttribute("data-toolbox-toggle");
      const own = document.getElementById("cap-" + id + "-enabled");
      if (own) {
        own.checked = target.checked;
        own.dispatchEvent(new Event("change", {bubbles: true}));
      }
      select(id, false);
      return;
    }
    const card = target.closest("[data-capability]");
    if (card && target.id === "cap-" + card.getAttribute("data-capability") + "-enabled") {
      const toggle = document.querySelector('[data-toolbox-toggle="' + card.getAttribute("data-capability") + '"]');
      if (toggle) toggle.checked = target.checked;
      const settings = card.querySelector(".cap-settings");
      if (settings && target.checked) settings.open = true; // what it needs comes into view
    }
  });

  // ---- unsaved changes
  function say(text, kind) {
    if (!status) return;
    status.textContent = text || "";
    status.setAttribute("data-toolbox-status", kind || "");
  }

  function markDirty(form) {
    dirty.add(form);
    if (form.hasAttribute("data-capability-form")) say(strings.unsaved, "unsaved");
  }

  document.querySelectorAll("[data-capability-form], [data-draft-form]").forEach(function (form) {
    form.addEventListener("input", function () { markDirty(form); });
    form.addEventListener("change", function () { markDirty(form); });
    form.addEventListener("submit", function () { dirty.delete(form); });
  });
  window.addEventListener("beforeunload", function (event) {
    if (!dirty.size) return;
    event.preventDefault();
    event.returnValue = ""; // the browser shows its own words
  });

  // ---- one Save for the draft
  if (!savebar) return;
  savebar.hidden = false;

  function clearErrors(card) {
    card.querySelectorAll("[data-js-error]").forEach(function (node) { node.remove(); });
  }

  function showError(card, key, message) {
    const note = document.createElement("p");
    note.className = "field-error";
    note.setAttribute("role", "alert");
    note.setAttribute("data-js-error", "");
    note.setAttribute("data-field-error", "");
    note.textContent = message;
    let place = null;
    if (key.indexOf("config.") === 0) {
      place = card.querySelector('[data-config-field="' + key.slice(7).split(".")[0] + '"]');
    } else if (key === "secret_id") {
      const secret = card.querySelector("select[name=secret_id]");
      place = secret && secret.parentNode;
    } else if (key === "collection_ids") {
      place = card.querySelector("[data-collection-picker]");
    } else if (key.indexOf("tool_approval.") === 0 || key.indexOf("tool_overrides.") === 0) {
      place = card.querySelector('[data-tool="' + key.split(".")[1] + '"]');
    }
    (place || card.querySelector("[data-js-errors]") || card).appendChild(note);
    const settings = card.querySelector(".cap-settings");
    if (settings) settings.open = true;
  }

  function flagRow(id, bad) {
    const r = row(id);
    if (!r) return;
    let badge = r.querySelector("[data-row-problem]");
    if (bad && !badge) {
      badge = document.createElement("span");
      badge.className = "badge warn";
      badge.setAttribute("data-row-problem", "");
      badge.textContent = "!";
      r.querySelector("[data-toolbox-open]").appendChild(badge);
    } else if (!bad && badge) {
      badge.remove();
    }
  }

  function saveOne(form) {
    const id = form.getAttribute("data-capability-form");
    const card = article(id);
    return fetch(form.action, {method: "POST", body: new FormData(form), credentials: "same-origin",
                               headers: {"Accept": "application/json", "X-CSRFToken": csrf(form)}})
      .then(function (response) {
        return response.json().then(function (body) { return {ok: response.ok, body: body}; });
      })
      .then(function (result) {
        clearErrors(card);
        const problems = result.body.problems || {};
        Object.keys(problems).forEach(function (key) { showError(card, key, problems[key]); });
        if (!result.ok && !Object.keys(problems).length) showError(card, "", result.body.message || "");
        flagRow(id, Object.keys(problems).length > 0 || !result.ok);
        if (result.ok) dirty.delete(form);
        // A capability bound with this one (Visuals binds Charts) shows it was switched on.
        (result.body.also_bound || []).forEach(function (other) {
          const own = document.getElementById("cap-" + other + "-enabled");
          const toggle = document.querySelector('[data-toolbox-toggle="' + other + '"]');
          if (own) own.checked = true;
          if (toggle) toggle.checked = true;
        });
        return {id: id, saved: result.ok, problems: Object.keys(problems).length, message: result.body.message};
      });
  }

  savebar.querySelector("[data-toolbox-save]").addEventListener("click", function () {
    const forms = Array.from(dirty).filter(function (form) { return form.hasAttribute("data-capability-form"); });
    if (!forms.length) { say(strings.saved, "saved"); return; }
    const button = this;
    button.disabled = true;
    say(strings.saving, "saving");
    const outcomes = [];
    forms.reduce(function (chain, form) {
      return chain.then(function () { return saveOne(form).then(function (o) { outcomes.push(o); }); });
    }, Promise.resolve()).then(function () {
      const failed = outcomes.filter(function (o) { return !o.saved; });
      const flawed = outcomes.filter(function (o) { return o.saved && o.problems; });
      if (failed.length) {
        select(failed[0].id, true);
        say(strings.not_saved + " " + (failed[0].message || ""), "not-saved");
      } else if (flawed.length) {
        select(flawed[0].id, true);
        say(strings.saved_with_problems, "saved-with-problems");
      } else {
        say(strings.saved, "saved");
      }
    }).catch(function () {
      say(strings.failed, "not-saved");
    }).then(function () { button.disabled = false; });
  });
}

setUpToolbox();
