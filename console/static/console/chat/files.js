// The files panel: present only when this conversation's agent keeps files; re-read when a turn ends, not on a
// timer. Files are read through the conversation (…/workspace/file and …/raw), so a shared chat shows them too.
import {h, fill} from "../dom.js";
import {S, T, state, fmtBytes, conversationUrl} from "./state.js";
import {schedule, renderUsage} from "./view.js";
// Present only when this conversation's agent keeps files; re-read when a turn ends, not on a timer. Files
// are read through the conversation (…/workspace/file and …/raw), so a shared chat shows them too.

export function workspaceUrl(tail, path) {
  const url = conversationUrl(S.urls.workspace) + (tail || "");
  return path ? url + "?path=" + encodeURIComponent(path) : url;
}
export function openFile(file) {
  const viewer = document.querySelector("[data-file-viewer]");
  viewer.hidden = false;
  viewer.replaceChildren(h("h3", {text: file.path.replace(/^\/workspace\//, "")}));
  if (/\.(png|jpe?g|gif|webp)$/i.test(file.path)) {
    viewer.appendChild(h("img", {src: workspaceUrl("/raw", file.path), alt: file.path}));
    return;
  }
  fetch(workspaceUrl("/file", file.path), {credentials: "same-origin"})
    .then(function (r) { return r.json(); })
    .then(function (data) {
      if (data.content !== undefined) viewer.appendChild(h("pre", {"data-file-text": "", text: data.content}));
      else viewer.appendChild(h("p", {class: "muted", text: (data.error || {}).message || ""}));
    });
}
export function loadFiles() {
  const panel = document.querySelector("[data-files]");
  if (!panel || !S.conversation_id || !S.urls.workspace) return;
  fetch(workspaceUrl(""), {credentials: "same-origin"})
    .then(function (r) { return r.ok ? r.json() : {workspace: null}; })
    .then(function (data) {
      const ws = data.workspace;
      panel.hidden = !ws;
      document.querySelector(".chat-layout").classList.toggle("with-files", !!ws);
      if (!ws) return;
      state.workspaceFill = Math.floor(100 * ws.used_bytes / Math.max(ws.max_bytes, 1));
      renderUsage();
      const known = ws.files.map(function (f) { return f.path; });
      if (JSON.stringify(known) !== JSON.stringify(state.workspaceFiles)) { state.workspaceFiles = known; schedule(); }
      panel.querySelector("[data-files-owner]").textContent = ws.label;
      panel.querySelector("[data-files-fill]").textContent = fill(T.files_fill, {
        used: fmtBytes(ws.used_bytes), max: fmtBytes(ws.max_bytes),
        percent: Math.floor(100 * ws.used_bytes / Math.max(ws.max_bytes, 1))});
      const list = panel.querySelector("[data-files-list]");
      list.replaceChildren();
      if (!ws.files.length) list.appendChild(h("li", {class: "muted", text: T.files_empty}));
      ws.files.forEach(function (file) {
        const open = h("button", {type: "button", class: "link", text: T.files_open});
        open.addEventListener("click", function () { openFile(file); });
        list.appendChild(h("li", {"data-file": file.path}, [
          h("span", {class: "file-name", text: file.path.replace(/^\/workspace\//, "")}),
          h("span", {class: "muted", text: fmtBytes(file.size)}),
          h("span", {class: "file-actions"}, [open,
            h("a", {href: workspaceUrl("/raw", file.path), download: "", text: T.files_download})]),
        ]));
      });
    });
}