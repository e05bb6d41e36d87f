// Files for the next message: the attach button, a drop on the conversation or a paste put them in the composer
// as chips (name, size, remove). Each is uploaded at once through POST /api/v1/attachments — the hosted page's
// intake: the same ceiling, the type read from the bytes — and the message names the ids the upload answered.
// A refusal stays on its chip with the server's reason; the other files and the question go on without it.
import {h, fill, post, errorMessage} from "../dom.js";
import {root, T, els, state, fmtBytes} from "./state.js";
import {showNotice} from "./view.js";
import {setBusy} from "./composer.js";

const ATTACHMENTS_URL = "/api/v1/attachments";
let attached = [];       // {key, name, size, mime, status: "uploading" | "ready" | "failed", id, error}
let inFlight = null;     // the files of a message sent but not yet admitted: back in the composer if refused
let chipsEl = null;
let attachKeys = 0;

export function fileChip(file, onRemove) {
  const status = file.status || "ready";
  const chip = h("li", {class: "file-chip status-" + status, "data-file-chip": status, title: file.name}, [
    h("span", {class: "file-chip-name", text: file.name}),
    h("span", {class: "file-chip-size muted", text: file.size === undefined || file.size === null ? "" : fmtBytes(file.size)}),
  ]);
  if (status === "uploading") chip.appendChild(h("span", {class: "muted", role: "status", text: T.uploading}));
  if (status === "failed") chip.appendChild(h("span", {class: "field-error", role: "alert", "data-file-error": "",
                                                      text: fill(T.upload_failed, {message: file.error || ""})}));
  if (onRemove) {
    const remove = h("button", {type: "button", class: "file-chip-remove", "data-remove-file": "",
                              "aria-label": fill(T.remove_file, {name: file.name}), text: "×"});
    remove.addEventListener("click", onRemove);
    chip.appendChild(remove);
  }
  return chip;
}
export function renderChips() {
  if (!chipsEl) return;
  chipsEl.replaceChildren.apply(chipsEl, attached.map(function (file) {
    return fileChip(file, function () {
      attached = attached.filter(function (f) { return f !== file; });
      renderChips();
      els.textarea.focus();
    });
  }));
  chipsEl.hidden = !attached.length;
  // A message may be only files ("Attached image: …" on the server): the text is required only without them.
  els.textarea.required = !readyFiles().length;
  if (els.send) els.send.disabled = state.busy || uploading();
}
export function readyFiles() { return attached.filter(function (f) { return f.status === "ready"; }); }
export function uploading() { return attached.some(function (f) { return f.status === "uploading"; }); }

function attachFiles(list) {
  Array.prototype.forEach.call(list || [], function (blob) {
    const file = {key: ++attachKeys, name: blob.name || "pasted", size: blob.size, status: "uploading"};
    attached.push(file);
    const body = new FormData();
    body.append("file", blob, file.name);
    post(ATTACHMENTS_URL, body)
      .then(function ({ok, json}) {
        if (ok) Object.assign(file, {status: "ready", id: json.id, name: json.name, size: json.size, mime: json.mime});
        else Object.assign(file, {status: "failed", error: errorMessage(json)});
      }, function () { Object.assign(file, {status: "failed", error: T.disconnected}); })
      .then(renderChips);
  });
  renderChips();
}

export function setupAttachments() {
  chipsEl = h("ul", {class: "composer-files", "data-composer-files": "", "aria-label": T.attached_files, hidden: ""});
  const input = h("input", {type: "file", multiple: "", hidden: "", "data-attach-input": "", tabindex: "-1"});
  const button = h("button", {type: "button", class: "button attach", "data-attach": "", "aria-label": T.attach_files,
                            title: T.attach_files, html: '<svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" ' +
    'fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 11.5l-8.6 8.6a5.5 ' +
    '5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9"/></svg>'});
  button.addEventListener("click", function () { input.click(); });
  input.addEventListener("change", function () { attachFiles(input.files); input.value = ""; });
  els.composer.insertBefore(chipsEl, els.composer.firstChild);
  const controls = els.composer.querySelector(".composer-controls") || els.composer;
  controls.insertBefore(button, controls.firstChild);
  controls.appendChild(input);
  // A drop anywhere on the conversation attaches (a file dropped beside the els.composer would otherwise make the
  // browser leave the chat to show it).
  root.addEventListener("dragover", function (event) {
    if (!event.dataTransfer || Array.prototype.indexOf.call(event.dataTransfer.types || [], "Files") < 0) return;
    event.preventDefault();
    els.composer.classList.add("dragging");
  });
  root.addEventListener("dragleave", function (event) {
    if (!event.relatedTarget || !root.contains(event.relatedTarget)) els.composer.classList.remove("dragging");
  });
  root.addEventListener("drop", function (event) {
    els.composer.classList.remove("dragging");
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    event.preventDefault();
    attachFiles(event.dataTransfer.files);
  });
  // A pasted screenshot is a file; pasted text stays text.
  els.textarea.addEventListener("paste", function (event) {
    const data = event.clipboardData;
    if (!data || !data.files || !data.files.length || data.getData("text/plain")) return;
    event.preventDefault();
    attachFiles(data.files);
  });
}


// The message was sent with these files: they go with it (or come back if it is refused).
export function sending(files) { inFlight = files.length ? files : null; }
export function sent() { attached = []; renderChips(); }
export function admitted() { inFlight = null; }

// An error frame for a message refused before it ran (an unusable file, a rule): its files go back in the
// composer, the refused one marked with the reason, so nothing the person attached is lost in silence. True
// when the error was such a refusal.
export function takeBackRefused(d) {
  if (!inFlight) return false;
  const refusedFiles = inFlight;
  inFlight = null;
  const last = state.turns[state.turns.length - 1];
  if (last && last.role === "user") {
    state.turns.pop();
    if (!els.textarea.value) els.textarea.value = last.text || "";
  }
  const fileProblem = /^attachment_/.test(d.code || "");
  refusedFiles.forEach(function (f) { if (fileProblem) Object.assign(f, {status: "failed", error: d.message}); });
  attached = refusedFiles.concat(attached);
  renderChips();
  if (!fileProblem) showNotice(fill(T.error, {message: d.message}));
  setBusy(false);
  return true;
}
