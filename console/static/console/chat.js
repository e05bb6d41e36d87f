// The web chat (/chat). One model of a turn, drawn by the renderer every surface shares (turn.js), live from
// socket frames and reopened from messages.parts — so a reopened turn looks exactly like the live one. The
// modules of chat/ keep what only web chat has: the socket's fold of frames (stream), the composer and its
// files (composer, attachments), the turns around the shared renderer (turns), approvals and questions
// (requests), the files panel (files), and the drawing of it all (view).
import {S, root, state, openSteps} from "./chat/state.js";
import {setUpRenderer} from "./chat/turns.js";
import {renderTranscript} from "./chat/view.js";
import {connect, socketSend} from "./chat/stream.js";
import {loadFiles} from "./chat/files.js";
import {setUpComposer, sendText, setBusy} from "./chat/composer.js";

if (S) {
  // The conversation's skeleton (chat.html) goes before the first drawing: the renderer keys turns by position.
  root.querySelectorAll("[data-transcript] > [data-skeleton]").forEach(function (el) { el.remove(); });
  const transcript = root.querySelector("[data-transcript]");
  if (transcript) transcript.setAttribute("aria-busy", "false");
  setUpRenderer();
  setUpComposer();
  // A reopened conversation opens exactly one past step: the last call of the latest turn that used a tool.
  for (let i = state.turns.length - 1; i >= 0; i--) {
    const calls = (state.turns[i].parts || []).filter(function (p) { return p.type === "tool"; });
    if (calls.length) { openSteps[calls[calls.length - 1].call.id] = true; break; }
  }
  if (!S.test_chat && (S.agents.length || S.conversation_id)) connect();  // the Builder's connects on its first message
  setUpTestChatReset();
  // A reopened conversation whose run still waits for a person: follow that run live, so its frames and a
  // decision on its approval made anywhere (the Approvals page, another tab) reach this view.
  const waiting = {};
  state.pending.approvals.concat(state.pending.questions).forEach(function (item) { if (item.run_id) waiting[item.run_id] = true; });
  Object.keys(waiting).forEach(function (runId) { socketSend({type: "watch", run_id: runId}); });
  // A reopened conversation whose last turn is still being answered (a tab reloaded mid-answer): follow that run
  // live as the busy turn it is; its end reads the transcript back (reconcile), filling what streamed before.
  const last = state.turns[state.turns.length - 1];
  const going = last && last.run_id && (last.role === "user" ? last.running :
    last.usage && ["queued", "running"].indexOf(last.usage.status) >= 0);
  if (going && !waiting[last.run_id] && !S.read_only) {
    state.activeRunId = last.run_id;
    setBusy(true);
    socketSend({type: "watch", run_id: last.run_id});
  }
  // The welcome interview (console/architect.py): the person's words from the home page's card, sent once.
  if (S.first_message && !S.conversation_id) sendText(S.first_message);
  loadFiles();
  renderTranscript();
}

// The Builder's "New test chat": the next message starts a conversation of its own with the draft.
function setUpTestChatReset() {
  const reset = root.querySelector("[data-test-chat-reset]");
  if (!reset) return;
  reset.addEventListener("click", function () {
    if (state.busy) return;
    S.conversation_id = null;
    state.turns = [];
    state.pending = {approvals: [], questions: []};
    state.lastUsage = null;
    renderTranscript();
    root.querySelector("[data-composer-text]").focus();
  });
}
