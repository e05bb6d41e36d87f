// Knowledge → a collection: upload by the button, a drop or a paste (each file sent on its own, with its upload
// progress), the documents' status refreshed while any is being read, and the search preview as you type.
// Without JavaScript the page still works: the form uploads, the search form submits.
import {csrf, fill, h, ready} from "./dom.js";

const POLL_MS = 1500;
const TYPE_PAUSE_MS = 300;

function strings() {
  const node = document.getElementById("knowledge-strings");
  return node ? JSON.parse(node.textContent) : {};
}

ready(() => {
  const words = strings();
  const section = document.querySelector("[data-documents]");
  const form = document.querySelector("[data-upload]");
  const log = document.querySelector("[data-upload-log]");
  const table = document.querySelector("[data-document-table]");
  const rows = document.querySelector("[data-document-rows]");
  let polling = null;

  function say(text, cls, attr) {
    if (!log) return null;
    const item = h("li", {class: cls || "", text});
    if (attr) item.setAttribute(attr, "");
    log.appendChild(item);
    return item;
  }

  // One row's status as the server gave it (knowledge.document_row): the badge, the progress, the reason.
  function paint(row, doc) {
    row.dataset.status = doc.status;
    const badge = row.querySelector("[data-doc-status]");
    badge.textContent = doc.status_label;
    badge.className = "badge" + (doc.status === "ready" ? " ok" : doc.status === "failed" ? " danger" : "");
    let progress = row.querySelector("[data-doc-progress]");
    if (doc.busy && !progress) {
      progress = h("progress", {"data-doc-progress": "", "aria-label": doc.status_label});
      badge.after(progress);
    } else if (!doc.busy && progress) {
      progress.remove();
    }
    let error = row.querySelector("[data-doc-error]");
    if (doc.error) {
      if (!error) { error = h("p", {class: "field-error", "data-doc-error": ""}); badge.parentNode.appendChild(error); }
      error.textContent = doc.error;
    } else if (error) {
      error.remove();
    }
    row.querySelector("[data-doc-chunks]").textContent = String(doc.chunks);
  }

  // A new document's row; its actions post the same forms as the server-drawn rows.
  function addRow(doc) {
    if (!rows || document.getElementById("doc-" + doc.id)) return;
    const actions = [];
    if (form) {
      const base = section.dataset.documentUrl.replace("__id__", doc.id);
      const token = h("input", {type: "hidden", name: "csrfmiddlewaretoken", value: csrf(form)});
      actions.push(h("td", {class: "doc-actions"}, [
        h("form", {method: "post", action: base + "reingest", class: "inline-form"},
          [token, h("button", {class: "button small", "data-doc-reingest": "", text: section.dataset.reingestLabel})]),
        h("form", {method: "post", action: base + "delete", class: "inline-form", "data-confirm": section.dataset.deleteConfirm},
          [token.cloneNode(), h("button", {class: "button small danger", "data-doc-delete": "", text: section.dataset.deleteLabel})]),
      ]));
    }
    const row = h("tr", {id: "doc-" + doc.id, "data-document": doc.id}, [
      h("td", {}, [h("span", {"data-doc-name": "", text: doc.name}), h("br"),
                   h("span", {class: "muted", text: doc.kind})]),
      h("td", {}, [h("span", {class: "badge", "data-doc-status": ""})]),
      h("td", {"data-doc-chunks": ""}),
      ...actions,
    ]);
    rows.appendChild(row);
    paint(row, doc);
    if (table) table.hidden = false;
    const none = document.querySelector("[data-no-documents]");
    if (none) none.remove();
  }

  function poll() {
    if (polling) return;
    polling = window.setTimeout(() => {
      polling = null;
      fetch(section.dataset.statusUrl, {credentials: "same-origin", headers: {Accept: "application/json"}})
        .then((r) => (r.ok ? r.json() : null))
        .then((data) => {
          if (!data) return;
          data.documents.forEach((doc) => {
            const row = document.getElementById("doc-" + doc.id);
            if (row) paint(row, doc); else addRow(doc);
          });
          if (data.documents.some((doc) => doc.busy)) poll();
        }, () => poll());
    }, POLL_MS);
  }

  // XMLHttpRequest rather than fetch: fetch reports no upload progress.
  function upload(file) {
    const line = say(fill(words.uploading, {name: file.name}), "", "data-upload-progress");
    const bar = h("progress", {max: "100", value: "0"});
    if (line) line.appendChild(bar);
    const body = new FormData();
    body.append("file", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.setRequestHeader("X-CSRFToken", csrf(form));
    request.setRequestHeader("Accept", "application/json");
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) bar.value = Math.round((100 * event.loaded) / event.total);
    });
    request.addEventListener("load", () => {
      if (line) line.remove();
      let data = {};
      try { data = JSON.parse(request.responseText); } catch (e) { data = {}; }
      (data.added || []).forEach(addRow);
      (data.refused || []).forEach((r) => say(r.name ? fill(words.refused, r) : r.message, "field-error", "data-upload-refused"));
      if (!data.added && !data.refused) say(words.failed, "field-error", "data-upload-refused");
      poll();
    });
    request.addEventListener("error", () => {
      if (line) line.remove();
      say(words.failed, "field-error", "data-upload-refused");
    });
    request.send(body);
  }

  if (form) {
    const input = form.querySelector("[data-upload-input]");
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      Array.from(input.files).forEach(upload);
      input.value = "";
    });
    input.addEventListener("change", () => { Array.from(input.files).forEach(upload); input.value = ""; });
    ["dragenter", "dragover"].forEach((type) => form.addEventListener(type, (event) => {
      event.preventDefault();
      form.classList.add("dragging");
    }));
    ["dragleave", "drop"].forEach((type) => form.addEventListener(type, () => form.classList.remove("dragging")));
    form.addEventListener("drop", (event) => {
      event.preventDefault();
      Array.from(event.dataTransfer.files || []).forEach(upload);
    });
    // A paste outside a text field: its files, or its text as a plain-text document.
    document.addEventListener("paste", (event) => {
      const target = event.target;
      if (target && target.closest && target.closest("input, textarea, [contenteditable]")) return;
      const files = Array.from((event.clipboardData && event.clipboardData.files) || []);
      if (files.length) { event.preventDefault(); files.forEach(upload); return; }
      const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
      if (text.trim()) {
        event.preventDefault();
        const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
        upload(new File([text], `${words.pasted}-${stamp}.txt`, {type: "text/plain"}));
      }
    });
  }
  if (section && section.querySelector("[data-doc-progress]")) poll();

  // ---- the search preview
  const preview = document.querySelector("[data-search-preview]");
  const query = document.querySelector("[data-search-input]");
  const results = document.querySelector("[data-search-results]");
  let pause = null;
  let asked = 0;

  function show(data) {
    results.textContent = "";
    if (!data.query || !data.query.trim()) return;
    if (data.words_only) results.appendChild(h("p", {class: "muted", "data-words-only": "", text: words.words_only}));
    const list = h("ol", {class: "hits"});
    if (!data.hits.length) list.appendChild(h("li", {class: "empty", text: words.no_results}));
    data.hits.forEach((hit) => list.appendChild(h("li", {"data-hit": ""}, [
      h("strong", {"data-hit-citation": "", text: hit.citation}), h("p", {text: hit.text})])));
    results.appendChild(list);
  }

  if (preview && query && results) {
    query.addEventListener("input", () => {
      window.clearTimeout(pause);
      pause = window.setTimeout(() => {
        const mine = ++asked;
        const url = preview.dataset.searchUrl + "?q=" + encodeURIComponent(query.value);
        fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}})
          .then((r) => r.json())
          .then((data) => { if (mine === asked) show(data); }, () => {});
      }, TYPE_PAUSE_MS);
    });
    query.form.addEventListener("submit", (event) => { event.preventDefault(); query.dispatchEvent(new Event("input")); });
  }
});
