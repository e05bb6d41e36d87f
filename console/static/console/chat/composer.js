// The composer: a message (with its files) sent through the one send path — or an edited version of an earlier
// one — Enter to send, ↑ to edit the last message, Esc or Stop to end a running turn, the agent picker; and the busy state that follows a turn.
import {S, T, els, state} from "./state.js";
import {schedule, showNotice, renderUsage} from "./view.js";
import {socketSend} from "./stream.js";
import {editLastMessage, takeEdit} from "./turns.js";
import {setupAttachments, readyFiles, uploading, sending, sent} from "./attachments.js";
import {setupVoice} from "./voice.js";

// While a turn runs, Send is disabled and Stop offered (issue 25): a message sent mid-turn was accepted but
// answered only after a reload, so one turn at a time; Stop ends the running one.
export function setBusy(value) {
  els.transcript.setAttribute("aria-busy", value ? "true" : "false");
  if (els.stop) els.stop.hidden = !value;
  if (els.send) els.send.disabled = value || uploading();
  if (state.busy !== value) { state.busy = value; schedule(); }  // the message actions follow
}


export function sendText(text, files) {
  if (!S.agent_id) { showNotice(T.choose_agent); return false; }
  files = files || [];
  const message = {type: "message", agent_id: S.agent_id, text: text};
  if (S.environment) message.environment = S.environment;  // the Builder's test chat runs the draft
  if (S.conversation_id) message.conversation_id = S.conversation_id;
  const editOf = takeEdit();  // an edited message: a new version of it, sent in its place (agents.branches)
  if (editOf) message.edit_of = editOf;
  state.activeRunId = null;  // a refusal is about this message, not the turn before it
  if (files.length) message.attachment_ids = files.map(function (f) { return f.id; });
  sending(files);
  state.turns.push({role: "user", text: text, attachments: files.map(function (f) { return {name: f.name, mime: f.mime, size: f.size}; })});
  schedule();
  socketSend(message);
  return true;
}

export function setUpComposer() {
  if (els.composer) {
    setupAttachments();
    setupVoice();
    els.composer.addEventListener("submit", function (event) {
      event.preventDefault();
      const text = els.textarea.value.trim();
      const files = readyFiles();
      if ((!text && !files.length) || uploading() || els.transcript.getAttribute("aria-busy") === "true") return;
      if (sendText(text, files)) {
        els.textarea.value = "";
        sent();
      }
    });
    els.textarea.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        els.composer.requestSubmit();
      } else if (event.key === "ArrowUp" && !els.textarea.value && !event.isComposing && !state.busy) {
        if (editLastMessage()) event.preventDefault();  // ↑ in an empty composer: edit the last message
      }
    });
    // Esc stops a running turn, wherever the focus is (a dialog of the page would take Esc first).
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && state.busy && els.stop && !els.stop.hidden && !event.defaultPrevented) {
        event.preventDefault();
        els.stop.click();
      }
    });
  }
  // agenticos.followUp(text) in a drawing (visuals.js) offers the text under it; the person's click sends it here.
  els.transcript.addEventListener("agenticos:follow-up", function (event) {
    if (els.transcript.getAttribute("aria-busy") !== "true" && event.detail && event.detail.text) sendText(event.detail.text);
  });
  if (els.stop) {
    els.stop.addEventListener("click", function () {
      socketSend({type: "stop", run_id: state.activeRunId});
    });
  }
  if (els.picker) {
    els.picker.addEventListener("change", function () { S.agent_id = els.picker.value; renderUsage(); schedule(); });
  }
}
