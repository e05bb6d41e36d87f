// Web chat's socket and its fold of frames into the turn model: streamed text and thinking, tool calls and
// results, drawings growing while their arguments stream, delegations, approvals and questions, a turn's end
// (after which the stored transcript is read back as the truth).
import {fill} from "../dom.js";
import {S, T, state, openSteps, followUpsByRun, liveViews, needsPerson, currentAgent, conversationUrl} from "./state.js";
import {schedule, showNotice, addConversationLink, retitle} from "./view.js";
import {delegationFor} from "./turns.js";
import {loadFiles} from "./files.js";
import {setBusy} from "./composer.js";
import {admitted, takeBackRefused} from "./attachments.js";

let drawing = null;  // a drawing's call grows while its arguments stream (turn.js)

let socket = null;
const queue = [];
export function connect() {
  socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + S.urls.socket);
  socket.addEventListener("open", function () { queue.splice(0).forEach(function (m) { socket.send(m); }); });
  socket.addEventListener("message", function (event) { onFrame(JSON.parse(event.data)); });
  socket.addEventListener("close", function () { socket = null; });
}
export function socketSend(payload) {
  const text = JSON.stringify(payload);
  if (!socket) connect();
  if (socket.readyState === 1) socket.send(text); else queue.push(text);
}

export function liveTurn() {
  const last = state.turns[state.turns.length - 1];
  if (last && last.role === "assistant" && last.run_id === state.activeRunId) return last;
  const agent = currentAgent();
  const turn = {role: "assistant", run_id: state.activeRunId, agent: agent ? agent.name : "", parts: [], usage: null, live: true};
  state.turns.push(turn);
  return turn;
}
export function findCall(id) {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    const parts = state.turns[i].parts || [];
    for (let j = 0; j < parts.length; j++) if (parts[j].type === "tool" && parts[j].call.id === id) return parts[j].call;
  }
  return null;
}
function addText(kind, content) {
  if (!content) return;
  const turn = liveTurn();
  const last = turn.parts[turn.parts.length - 1];
  if (last && last.type === kind && state.pendingKind !== kind) last.text += content;
  else turn.parts.push({type: kind, text: content});
  state.pendingKind = null;
}

function onFrame(frame) {
  const d = frame.data || {};
  state.lastFrameAt = Date.now();
  if (["model_request_start", "part_start", "text_delta", "tool_call"].indexOf(frame.type) >= 0) setBusy(true);
  if (frame.type === "part_start" || frame.type === "tool_call_delta" || frame.type === "tool_call") {
    if (!drawing) drawing = window.AgenticTurn.drawings();
    drawing.apply(liveTurn().parts, frame);
  }
  // "Summarizing…" (capabilities/compaction) lasts until the next frame of the run.
  if (frame.type !== "compaction") state.turns.forEach(function (t) { if (t.compacting) t.compacting = false; });
  switch (frame.type) {
    case "compaction":
      if (d.status === "summarizing") Object.assign(liveTurn(), {compacting: true, compactionGaveUp: null});
      else if (d.status === "gave_up") liveTurn().compactionGaveUp = d;
      break;
    case "capability_missing":
      if (d.capability && d.capability.id) {
        state.capabilityCards = Object.assign({}, state.capabilityCards);
        state.capabilityCards[d.capability.id] = d;
      }
      break;
    case "approval_decided":
      // Decided here, on the Approvals page or anywhere else: every open view of the run drops the card.
      state.pending.approvals = state.pending.approvals.filter(function (a) { return a.approval_id !== d.approval_id; });
      state.activeRunId = d.run_id;
      if (d.status === "approved" || d.status === "rejected") showNotice(d.status === "approved" ? T.approved : T.rejected);
      if (d.status === "approved") setBusy(true);
      break;
    case "conversation_created":
      S.conversation_id = d.conversation_id;
      if (S.test_chat) break;  // the Builder's test chat stays on the Builder: its conversation is in no list
      if (window.history && history.replaceState) history.replaceState(null, "", S.urls.chat + d.conversation_id + "/");
      addConversationLink(d.conversation_id, d.title);
      break;
    case "conversation_titled":
      // The title model's title after the first exchange (agents.titles): the list entry and the heading follow.
      if (d.conversation_id === S.conversation_id) retitle(d.conversation_id, d.title);
      break;
    case "message_saved":
      // The person's message is stored: its id lets Edit and ↑ work at once, before the turn's end reads the
      // transcript back (reconcile). A new message is its only version; an edit's siblings come with reconcile.
      if (d.role === "user") {
        for (let i = state.turns.length - 1; i >= 0; i--) {
          const turn = state.turns[i];
          if (turn.role !== "user") continue;
          if (!turn.message_id) { turn.message_id = d.message_id; turn.versions = turn.versions || [d.message_id]; }
          break;
        }
      }
      break;
    case "run_started":
      admitted();  // the files are the message's now
      state.activeRunId = d.run_id;
      liveTurn();
      setBusy(true);
      break;
    case "part_start":
      if (d.part_type === "text" || d.part_type === "thinking") state.pendingKind = d.part_type;
      break;
    case "resumed": {
      // The worker running this turn was lost and another goes on from its last step: the turn is redrawn as
      // that step left it (what streamed after it is done again), keeping the cards of calls already drawn.
      const turn = liveTurn();
      const drawn = {};
      turn.parts.forEach(function (p) { if (p.type === "tool") drawn[p.call.id] = p; });
      turn.parts = (d.parts || []).map(function (p) {
        if (p.type !== "tool") return {type: p.type, text: p.text};
        return drawn[p.tool_call_id] || {type: "tool", call: {id: p.tool_call_id, name: "", args: {}, result: null,
                                                               status: "running"}};
      });
      state.pendingKind = null;
      setBusy(true);
      break;
    }
    case "text_delta": addText("text", d.content); break;
    case "thinking_delta": addText("thinking", d.content); break;
    case "tool_call":
      if (!findCall(d.tool_call_id)) {
        liveTurn().parts.push({type: "tool", call: {id: d.tool_call_id, name: d.tool_name, args: d.args || {},
                                                    result: null, status: "running", live_url: liveViews[d.tool_call_id],
                                                    needs_person: needsPerson[d.tool_call_id]}});
      }
      state.pendingKind = null;
      break;
    case "browser_live": {
      // The running browse's live view: a "Watch the browser" link on its step (turn.js liveLinks).
      const browsing = findCall(d.call_id);
      if (browsing) browsing.live_url = d.url; else liveViews[d.call_id] = d.url;
      break;
    }
    case "browser_needs_person": {
      // Only a person can go on: the browse's step says so, and why, while it runs (turn.js needsPerson).
      const needing = findCall(d.call_id);
      if (needing) needing.needs_person = String(d.reason || ""); else needsPerson[d.call_id] = String(d.reason || "");
      break;
    }
    case "tool_result": {
      let call = findCall(d.tool_call_id);
      if (!call) {
        call = {id: d.tool_call_id, name: "", args: {}, result: null, status: "running"};
        liveTurn().parts.push({type: "tool", call: call});
      }
      call.result = d.content;
      call.status = d.ok === false ? "error" : "ok";
      if (openSteps[call.id] === undefined) openSteps[call.id] = true; // what just finished is what one looks at
      break;
    }
    case "subagent_started": {
      const opened = delegationFor(d);
      Object.assign(opened, {parent_task_id: d.parent_task_id || null, depth: d.depth, name: d.name, kind: d.kind,
                             mode: d.mode, task: d.task, tool_call_id: d.tool_call_id});
      if (d.definition) opened.definition = d.definition;
      break;
    }
    case "subagent_delta": {
      const inner = delegationFor(d).parts;
      const lastInner = inner[inner.length - 1];
      if (!d.new_part && lastInner && lastInner.type === d.part_type) lastInner.text += d.content;
      else inner.push({type: d.part_type, text: d.content});
      break;
    }
    case "subagent_tool_call":
      delegationFor(d).parts.push({type: "tool", tool_call_id: d.tool_call_id, tool_name: d.tool_name,
                                   args: d.args || {}, status: "running", result: null});
      break;
    case "subagent_tool_result":
      delegationFor(d).parts.forEach(function (p) {
        if (p.type === "tool" && p.tool_call_id === d.tool_call_id) { p.status = d.ok === false ? "error" : "ok"; p.result = d.content; }
      });
      break;
    case "subagent_finished": {
      const closed = delegationFor(d);
      closed.status = d.status;
      closed.usage = d.usage || null;
      break;
    }
    case "tool_approval_required": {
      state.activeRunId = d.run_id;
      const parked = findCall(d.tool_call_id);
      if (parked) parked.status = "parked";
      if (!state.pending.approvals.some(function (a) { return a.approval_id === d.approval_id; })) state.pending.approvals.push(d);
      break;
    }
    case "ask_user":
      state.activeRunId = d.run_id;
      if (!state.pending.questions.some(function (q) { return q.question_id === d.question_id; })) state.pending.questions.push(d);
      break;
    case "follow_ups":
      if (d.conversation_id !== S.conversation_id) break;
      followUpsByRun[d.run_id] = d.steps || [];
      state.turns.forEach(function (t) { if (t.role === "assistant" && t.run_id === d.run_id) t.follow_ups = d.steps || []; });
      break;
    case "complete": {
      const turn = liveTurn();
      turn.usage = Object.assign({status: d.status}, d.usage || {});
      state.lastUsage = turn.usage;
      const agent = currentAgent();
      if (agent && d.usage) agent.budget.spent = String(Number(agent.budget.spent) + Number(d.usage.cost_usd || 0));
      setBusy(false);
      reconcile();
      break;
    }
    case "error": {
      if (takeBackRefused(d)) break;  // refused before it ran: the message is back in the composer
      // A stop the person asked for is not an error: the turn keeps what streamed and says it was stopped.
      const stopped = d.code === "cancelled";
      if (state.activeRunId && stopped) liveTurn().stopped = true;
      else if (state.activeRunId) liveTurn().error = d.message;
      else showNotice(fill(T.error, {message: d.message}));
      setBusy(false);
      // A refused regenerate or edit took turns off the screen before the server said no: read them back.
      reconcile(state.activeRunId && !stopped ? d.message : null);
      break;
    }
  }
  schedule();
}

// When a turn ends, the stored transcript is the truth (statuses of failed calls, grouping of a resumed run).
export function reconcile(errorText) {
  if (!S.conversation_id) return;
  const runId = state.activeRunId;
  fetch(conversationUrl(S.urls.turns), {credentials: "same-origin"})
    .then(function (r) { return r.json(); })
    .then(function (data) {
      // A turn started since this was asked for: its own end reconciles; this answer would drop it.
      if (state.activeRunId !== runId) return;
      state.turns = data.turns;
      if (errorText) state.turns.forEach(function (t) { if (t.run_id === runId && t.role === "assistant") t.error = errorText; });
      state.pending = data.pending;
      state.lastUsage = data.usage || state.lastUsage;
      schedule();
    });
  loadFiles();
}
