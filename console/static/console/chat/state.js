// What web chat knows, shared by its modules: the server's state (#chat-state: strings, agents, URLs, the
// reopened conversation's turns and pending requests), the page's elements, and what changes while it runs.
const stateNode = document.getElementById("chat-state");
export const root = document.querySelector("[data-chat]");
export const S = root && stateNode ? JSON.parse(stateNode.textContent) : null;
export const T = S ? S.strings : {};

function find(selector) { return root ? root.querySelector(selector) : null; }
export const els = {
  transcript: find("[data-transcript]"),
  requests: find("[data-requests]"),
  usage: find("[data-usage]"),
  composer: find("[data-composer]"),
  textarea: find("[data-composer-text]"),
  stop: find("[data-stop]"),
  send: find("[data-send]"),
  picker: find("[data-agent-picker]"),
};

export const state = {
  turns: (S && S.turns) || [],
  pending: (S && S.pending) || {approvals: [], questions: []},
  activeRunId: null,
  pendingKind: null,     // a new part starts at the next delta (part_start)
  lastUsage: (S && S.usage) || null,
  busy: false,           // a turn is running (Send disabled, Stop offered)
  lastFrameAt: 0,
  workspaceFiles: null,  // the conversation's file paths (null: no workspace)
  workspaceFill: null,   // percent, from the conversation's listing (null: no workspace)
  // The capability_missing frame's card data by capability id, and what Enable / Ask answered; replaced (not
  // mutated) on a change, so a turn's foot that depends on them is drawn again.
  capabilityCards: {},
  capabilityOutcomes: {},
  editing: null,     // {message_id}: the person's message the composer's text is a new version of
  commenting: null,  // the answer (head message id) whose feedback comment field is open
};
export const openSteps = {};     // tool call id -> true/false chosen by the reader (or opened by the client)
export const questionIndex = {}; // question id -> index being answered; "summary" for the review
export const answers = {};       // question id -> [answers as shown in the summary]
export const answerValues = {};  // question id -> [answers as sent]
export const followUpsByRun = {}; // run id -> next steps that arrived live (a reconcile fetched earlier must not drop them)
export const liveViews = {};     // tool call id -> its browse's live view path (browser_live), for a call not drawn yet
export const needsPerson = {};   // tool call id -> why only a person can go on (browser_needs_person), likewise

export function currentAgent() {
  if (!S) return null;
  return S.agents.find((a) => a.id === S.agent_id) || null;
}
export function money(value) {
  const n = Number(value || 0);
  return n < 0.01 && n > 0 ? n.toFixed(4) : n.toFixed(2);
}
export function fmtBytes(value) {
  const n = Number(value) || 0;
  if (n < 1024) return n + " B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(n < 10240 ? 1 : 0) + " KB";
  return (n / (1024 * 1024)).toFixed(1) + " MB";
}
// A URL of the server's that names this conversation in place of the zero UUID.
export function conversationUrl(template) {
  return template.replace("00000000-0000-0000-0000-000000000000", S.conversation_id);
}
