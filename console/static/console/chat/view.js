// Drawing web chat: the transcript (on the next animation frame, once per batch of frames), the pending
// requests, the usage strip, notices and the conversation list's new entry.
import {h, fill} from "../dom.js";
import {S, T, els, state, currentAgent, money} from "./state.js";
import {renderer} from "./turns.js";
import {renderRequests} from "./requests.js";
import {sendText} from "./composer.js";

let renderQueued = false;

export function renderTranscript() {
  renderQueued = false;
  const atBottom = els.transcript.scrollHeight - els.transcript.scrollTop - els.transcript.clientHeight < 80;
  renderStarters();
  renderer.render(els.transcript, state.turns);  // keyed: only what changed is drawn again
  if (atBottom) els.transcript.scrollTop = els.transcript.scrollHeight;
  renderRequests();
  renderUsage();
}
export function schedule() {
  if (renderQueued) return;
  renderQueued = true;
  window.requestAnimationFrame(renderTranscript);
}


// ---------------------------------------------------------------- starter prompts

// An empty chat offers the agent's starter prompts (its spec's starter_prompts); a click sends one. They go when
// the conversation starts, and follow the agent picker.
let startersFor = null;
function renderStarters() {
  const agent = currentAgent();
  const prompts = !state.turns.length && !S.conversation_id && els.composer && agent ? agent.starter_prompts || [] : [];
  let box = els.transcript.querySelector(":scope > [data-starters]");
  const key = prompts.length ? agent.id : null;
  if (box && startersFor === key) return;
  if (box) box.remove();
  startersFor = key;
  if (!prompts.length) return;
  box = h("div", {class: "starters", role: "group", "aria-label": fill(T.starters, {name: agent.name}), "data-starters": ""},
    prompts.map(function (text) {
      const b = h("button", {type: "button", class: "starter", "data-starter": "", text: text});
      b.addEventListener("click", function () { if (!state.busy) sendText(text); });
      return b;
    }));
  els.transcript.insertBefore(box, els.transcript.firstChild);
}

// ---------------------------------------------------------------- usage strip

export function renderUsage() {
  if (!els.usage) return;
  els.usage.innerHTML = "";
  const agent = currentAgent();
  if (agent) {
    els.usage.appendChild(h("span", {"data-agent-budget": "", text: agent.budget.limit === null ? T.agent_no_budget :
      fill(T.agent_budget, {spent: money(agent.budget.spent), limit: money(agent.budget.limit)})}));
  }
  const org = S.org_budget;
  if (org.limit !== null && Number(org.limit) > 0 && Number(org.spent) / Number(org.limit) >= 0.8) {
    els.usage.appendChild(h("span", {"data-org-budget": "", text: fill(T.org_budget, {
      percent: Math.round(Number(org.spent) / Number(org.limit) * 100), limit: money(org.limit)})}));
  }
  if (state.lastUsage) {
    els.usage.appendChild(h("span", {"data-last-usage": "", text: fill(T.tokens, {input: state.lastUsage.input_tokens,
      output: state.lastUsage.output_tokens}) + " · " + fill(T.cost, {cost: money(state.lastUsage.cost_usd)})}));
  }
  const ctx = state.lastUsage && state.lastUsage.context_tokens;
  if (ctx) {  // how full the model's window was at the last request: the agent that does not compact hits the ceiling
    const win = state.lastUsage.context_window;
    els.usage.appendChild(h("span", {"data-context-fill": "", text: win ?
      fill(T.context_fill, {percent: Math.max(1, Math.round(ctx / win * 100)), window: Number(win).toLocaleString()}) :
      fill(T.context_tokens, {tokens: Number(ctx).toLocaleString()})}));
  }
  if (state.workspaceFill !== null) {  // the workspace counts like the money: a full one refuses writes
    els.usage.appendChild(h("span", {"data-workspace-fill": "", text: fill(T.workspace_fill, {percent: state.workspaceFill})}));
  }
}

export function showNotice(text) {
  if (!els.requests) return;
  const note = h("p", {class: "notice", role: "status", text: text});
  els.requests.parentNode.insertBefore(note, els.requests);
  setTimeout(function () { note.remove(); }, 4000);
}

// A new conversation joins the list at once, so it can be reopened without a reload.
export function addConversationLink(id, title) {
  const aside = document.querySelector(".conversations");
  if (!aside) return;
  // It is active today: the top of Today's group, which comes after the pins (made when there is none yet).
  let list = aside.querySelector('.conversation-list[data-group="today"]');
  if (!list) {
    const empty = aside.querySelector(".empty");
    if (empty) empty.remove();
    const heading = h("h3", {class: "conversation-group", id: "conversations-today", text: T.today});
    list = h("ul", {class: "conversation-list", "data-group": "today", "aria-labelledby": "conversations-today"});
    const pinned = aside.querySelector('.conversation-list[data-group="pinned"]');
    const after = pinned ? pinned.nextSibling : aside.querySelector(".conversation-group");
    aside.insertBefore(heading, after || null);
    aside.insertBefore(list, heading.nextSibling);
  }
  aside.querySelectorAll("[aria-current]").forEach(function (a) { a.removeAttribute("aria-current"); });
  const agent = currentAgent();
  list.insertBefore(h("li", {}, [h("a", {href: S.urls.chat + id + "/", "aria-current": "page"}, [
    h("span", {class: "conv-title", text: title || (agent ? agent.name : "")}),
    h("span", {class: "conv-meta", text: agent ? agent.name : ""}),
  ])]), list.firstChild);
}

// A conversation's new title (the title model's): its entry in the list, and the heading when it is the one open.
export function retitle(id, title) {
  document.querySelectorAll('.conversation-list a[href$="/' + id + '/"] .conv-title').forEach(function (t) { t.textContent = title; });
  const heading = document.querySelector(".chat-title");
  if (heading && S.conversation_id === id) heading.textContent = title;
}
