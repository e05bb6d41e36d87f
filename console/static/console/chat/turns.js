// Web chat's turns: the one turn renderer (turn.js) and what only web chat draws around it — a turn's foot
// (errors, setup cards, a missing capability, next steps, usage), delegation panels, the message actions.
import {h, fill, csrf, post, errorMessage} from "../dom.js";
import {capabilityCard as sharedCapabilityCard, connectionCard} from "../cards.js";
import {S, T, els, state, openSteps, followUpsByRun, currentAgent, money} from "./state.js";
import {schedule, renderTranscript, showNotice} from "./view.js";
import {openFile, workspaceUrl} from "./files.js";
import {sendText} from "./composer.js";
import {fileChip} from "./attachments.js";
import {liveTurn, reconcile, socketSend} from "./stream.js";
import {proposalCard, askArchitect} from "./proposal.js";

const pretty = (value) => window.AgenticTurn.pretty(value);

// A file the agent wrote is a card naming it, with Open and Download. The path is resolved against the
// conversation's own listing, not trusted from the arguments (write_file("a.md") writes /workspace/a.md);
// with no match the card is drawn without controls that would fail.
function isFileCall(call) {
  return (call.name === "write_file" || call.name === "edit_file") && call.status === "ok" &&
    call.args && typeof call.args.path === "string";
}
function resolveFile(path) {
  if (!state.workspaceFiles) return null;
  const candidates = path.charAt(0) === "/" ? [path] : ["/workspace/" + path.replace(/^\.\//, ""), "/" + path];
  return candidates.filter(function (c) { return state.workspaceFiles.indexOf(c) >= 0; })[0] || null;
}
function fileCard(call) {
  if (!isFileCall(call)) return null;
  const found = resolveFile(call.args.path);
  const name = (found || call.args.path).replace(/^\/workspace\//, "");
  const card = h("div", {class: "file-card", "data-file-card": found || ""}, [h("span", {class: "file-name", text: name})]);
  if (found) {
    const open = h("button", {type: "button", class: "link", text: T.files_open});
    open.addEventListener("click", function () { openFile({path: found}); });
    card.appendChild(h("span", {class: "file-actions"}, [open,
      h("a", {href: workspaceUrl("/raw", found), download: "", text: T.files_download})]));
  }
  return h("div", {}, [card, h("pre", {class: "result-text", text: pretty(call.result)})]);
}


// The one turn renderer (turn.js), given what only web chat draws: delegation panels, a turn's foot, the
// message actions, the person's turn with its files.
export let renderer = null;
let RT = {}, markdown = null, rail = null;
export function setUpRenderer() {
  renderer = window.AgenticTurn.create({
    strings: T, phrases: S.phrases, fileCard, openSteps, onChange: () => renderTranscript(),
    part(part, turn) {
      if (part.type !== "delegation" || part.parent_task_id) return null; // a child is drawn inside its parent's panel
      return delegationPanel(part, turn.parts);
    },
    head(turn) {
      const name = turn.agent || "";
      return h("header", {class: "turn-head"}, [h("span", {class: "avatar", "aria-hidden": "true", text: name.charAt(0).toUpperCase()}),
                                                h("h3", {class: "agent-name", text: name})]);
    },
    foot: turnFoot,
    actions: messageActions,
    user: userTurn,
    liveLinks: true,
    // What a turn's foot depends on besides the turn itself: next steps that arrived live, the workspace listing,
    // whether anything runs (which offers Regenerate / Edit / the arrows), the message's ids and versions, and
    // whether its feedback comment is open.
    version(turn) {
      return [followUpsByRun[turn.run_id] || null, state.workspaceFiles, state.capabilityCards, state.capabilityOutcomes,
              state.busy, turn.message_id || null, turn.versions || null, turn.feedback || null,
              state.commenting === turn.head_id && !!turn.head_id];
    },
  });
  RT = renderer.strings;  // the renderer's strings: the server's, with English defaults for newer labels
  markdown = renderer.markdown;
  rail = renderer.rail;
}


// ---------------------------------------------------------------- message actions

// Copy on every message. Stored messages (agents.branches) also get, while nothing runs: Regenerate on every answer
// (a new version in its place: the old one stays, behind the arrows), Edit on every message of the person's (the
// edited text is a new version, the conversation goes on from it), the version arrows where there are several,
// and 👍/👎 on every answer.
function messageActions(turn) {
  const out = [];
  if (renderer.messageText(turn)) out.push(renderer.copyButton(function () { return renderer.messageText(turn); }));
  // A Builder test conversation has no versions or feedback: those belong to conversations of the Chat list.
  const own = els.composer && S.conversation_id && !S.read_only && !S.test_chat;
  if (own && turn.role === "assistant" && turn.head_id) out.push(feedbackButtons(turn));
  const arrows = versionArrows(turn);
  if (arrows) out.push(arrows);
  if (!own || state.busy) return out;
  if (turn.role === "assistant" && turn.head_id) {
    const again = h("button", {type: "button", class: "link turn-action", "data-action": "regenerate", text: RT.regenerate});
    again.addEventListener("click", function () { regenerate(turn); });
    out.push(again);
  }
  if (turn.role === "user" && turn.message_id) {
    const edit = h("button", {type: "button", class: "link turn-action", "data-action": "edit", text: RT.edit_message,
                           title: RT.edit_resend});  // named "Edit": a name with "send" would be a second Send
    edit.addEventListener("click", function () { editMessage(turn); });
    out.push(edit);
  }
  return out;
}

// The turns from `turn` on leave the screen (the server moved them off the branch); a new one takes their place.
function cutFrom(turn) {
  const at = state.turns.indexOf(turn);
  if (at >= 0) state.turns = state.turns.slice(0, at);
}
function regenerate(turn) {
  if (state.busy || !turn.head_id) return;
  cutFrom(turn);
  state.activeRunId = null;  // a refusal is about this request, not the turn before it
  schedule();
  socketSend({type: "regenerate", conversation_id: S.conversation_id, message_id: turn.head_id});
}

// Editing: the message's text in the composer, sent as a new version of it (composer.js sendText reads state.editing).
function editMessage(turn) {
  if (!els.textarea || !turn.message_id) return false;
  state.editing = {message_id: turn.message_id};
  els.textarea.value = turn.text || "";
  els.textarea.focus();
  els.textarea.setSelectionRange(els.textarea.value.length, els.textarea.value.length);
  showEditing();
  return true;
}
export function showEditing() {
  let note = els.composer && els.composer.querySelector("[data-editing]");
  if (!state.editing) { if (note) note.remove(); return; }
  if (note) return;
  const cancel = h("button", {type: "button", class: "link", "data-editing-cancel": "", text: T.editing_cancel});
  cancel.addEventListener("click", function () { state.editing = null; els.textarea.value = ""; showEditing(); });
  note = h("p", {class: "editing-note muted", "data-editing": "", role: "status"}, [T.editing + " ", cancel]);
  els.composer.insertBefore(note, els.composer.firstChild);
}
export function editLastMessage() {
  for (let i = state.turns.length - 1; i >= 0; i--) if (state.turns[i].role === "user") return editMessage(state.turns[i]);
  return false;
}
export function takeEdit(text) {
  // The message being edited and everything after it leave the screen; the edited text is sent in their place.
  const editing = state.editing;
  if (!editing) return null;
  state.editing = null;
  showEditing();
  const turn = state.turns.find(function (t) { return t.role === "user" && t.message_id === editing.message_id; });
  if (turn) cutFrom(turn);
  return editing.message_id;
}

// ‹ 2 / 3 › under a message with versions: the chosen one's branch becomes the one on screen (for every tab, the
// API and the next turn's history), then the stored transcript is read back.
function versionArrows(turn) {
  const versions = turn.versions || [];
  const id = turn.role === "user" ? turn.message_id : turn.head_id;
  const at = versions.indexOf(id);
  if (versions.length < 2 || at < 0) return null;
  function go(to) {
    if (state.busy || to < 0 || to >= versions.length) return;
    post(apiUrl("/branch"), {message_id: versions[to]}, {json: true}).then(function (r) {
      if (!r.ok) { showNotice(fill(T.error, {message: errorMessage(r.json)})); return; }
      reconcile();
    });
  }
  const previous = h("button", {type: "button", class: "link turn-action version-arrow", "data-version-previous": "",
                                "aria-label": T.version_previous, text: "‹", disabled: at === 0 || state.busy});
  const next = h("button", {type: "button", class: "link turn-action version-arrow", "data-version-next": "",
                            "aria-label": T.version_next, text: "›", disabled: at === versions.length - 1 || state.busy});
  previous.addEventListener("click", function () { go(at - 1); });
  next.addEventListener("click", function () { go(at + 1); });
  return h("span", {class: "versions", role: "group", "aria-label": T.versions, "data-versions": ""}, [previous, h("span", {"data-version-of": "", text: fill(T.version_of, {index: at + 1, count: versions.length})}), next]);
}

function apiUrl(tail) {
  return "/api/v1/conversations/" + encodeURIComponent(S.conversation_id) + tail;
}

// The renderer's thumb (turn.js: drawn, not an emoji), one copy for web chat and the visitors' surfaces.
const thumb = () => window.AgenticTurn.thumb();

// 👍/👎 on an answer (agents.feedback): a click saves the rating at once and offers a comment; the pressed one
// again takes it back.
function feedbackButtons(turn) {
  const given = turn.feedback || null;
  const url = apiUrl("/messages/" + turn.head_id + "/feedback");
  function save(rating, comment) {
    return fetch(url, {method: "PUT", credentials: "same-origin", body: JSON.stringify({rating: rating, comment: comment || ""}),
                       headers: {"X-CSRFToken": csrf(), "Content-Type": "application/json", "Accept": "application/json"}})
      .then(function (r) { return r.ok; });
  }
  function rate(rating) {
    if (given && given.rating === rating) {
      fetch(url, {method: "DELETE", credentials: "same-origin", headers: {"X-CSRFToken": csrf()}}).then(function (r) {
        if (r.ok) { turn.feedback = null; state.commenting = null; schedule(); }
      });
      return;
    }
    save(rating, "").then(function (ok) {
      if (!ok) return;
      turn.feedback = {rating: rating, comment: ""};
      state.commenting = turn.head_id;
      schedule();
    });
  }
  const up = h("button", {type: "button", class: "link turn-action feedback", "data-feedback": "up", "aria-label": T.feedback_up,
                          title: T.feedback_up, "aria-pressed": given && given.rating === "up" ? "true" : "false"}, [thumb()]);
  const down = h("button", {type: "button", class: "link turn-action feedback", "data-feedback": "down", "aria-label": T.feedback_down,
                            title: T.feedback_down, "aria-pressed": given && given.rating === "down" ? "true" : "false"}, [thumb()]);
  up.addEventListener("click", function () { rate("up"); });
  down.addEventListener("click", function () { rate("down"); });
  const group = h("span", {class: "feedback-buttons", role: "group", "data-feedback-buttons": ""}, [up, down]);
  if (given && state.commenting === turn.head_id) {
    const field = h("textarea", {rows: "2", maxlength: "2000", "aria-label": T.feedback_comment, placeholder: T.feedback_comment,
                                 "data-feedback-comment": ""});
    const send = h("button", {type: "submit", class: "button small", text: T.feedback_send});
    const form = h("form", {class: "feedback-form", "data-feedback-form": ""}, [field, send]);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      save(given.rating, field.value).then(function (ok) {
        if (!ok) return;
        turn.feedback = {rating: given.rating, comment: field.value.trim()};
        state.commenting = null;
        showNotice(T.feedback_thanks);
        schedule();
      });
    });
    group.appendChild(form);
  }
  return group;
}


// ---------------------------------------------------------------- turns

// The person's message, with the files it carried (name, type, size) above its text — live and reopened alike.
function userTurn(turn) {
  const files = turn.attachments || [];
  const actions = messageActions(turn);
  return h("article", {class: "turn turn-user", "data-turn": "user"}, [
    h("h3", {class: "visually-hidden", text: T.you}),
    h("div", {class: "turn-user-body"}, [
      files.length ? h("ul", {class: "message-files", "data-message-files": "", "aria-label": T.attached_files},
                       files.map(function (f) { return fileChip(f); })) : null,
      turn.text || !files.length ? h("div", {class: "bubble", text: turn.text || ""}) : null,
      actions.length ? h("div", {class: "turn-actions", role: "group", "data-turn-actions": ""}, actions) : null,
    ]),
  ]);
}

function turnFoot(turn) {
  const out = [];
  if (turn.error) out.push(h("p", {class: "turn-error", role: "alert", text: fill(T.error, {message: turn.error})}));
  else if (turn.stopped || (turn.usage && turn.usage.status === "cancelled")) {
    out.push(h("p", {class: "turn-stopped muted", "data-stopped": "", text: T.stopped}));
  }
  let cards = [];
  (turn.parts || []).forEach(function (p) {
    const r = p.type === "tool" && p.call.name === "propose_setup" ? p.call.result : null;
    // Each card keeps where it came from: an agent setup is accepted by its run and tool call (proposal.js).
    if (r && r.cards) cards = cards.concat(r.cards.map((c, i) => ({...c, _from: {run: turn.run_id, call: p.call.id, index: i}})));
  });
  if (cards.length) out.push(setupCards(cards.slice(0, 3)));
  (turn.parts || []).forEach(function (p) {
    // The card is drawn from the request_capability call itself, so a reopened conversation shows it again.
    if (p.type === "tool" && p.call.name === "request_capability" && p.call.status === "ok" && p.call.args &&
        p.call.args.capability_id) out.push(capabilityCard(p.call.args));
  });
  const steps = turn.follow_ups && turn.follow_ups.length ? turn.follow_ups : followUpsByRun[turn.run_id];
  if (steps && steps.length) out.push(followUps(steps));
  if (turn.usage && turn.usage.status && turn.usage.status !== "running" && turn.usage.status !== "queued") {
    const cost = fill(turn.usage.cost_is_partial ? T.cost_partial : T.cost, {cost: money(turn.usage.cost_usd)});
    out.push(h("p", {class: "turn-usage", "data-turn-usage": ""}, [
      h("span", {"data-tokens": "", text: fill(T.tokens, {input: turn.usage.input_tokens, output: turn.usage.output_tokens})}),
      " · ", h("span", {"data-cost": "", text: cost}),
    ]));
  }
  return out;
}

// Suggested next steps (capabilities/follow_ups): buttons under the answer; a click sends the text.
function followUps(steps) {
  const group = h("div", {class: "follow-ups", role: "group", "aria-label": T.follow_ups, "data-follow-ups": ""});
  steps.forEach(function (text) {
    const b = h("button", {type: "button", class: "button follow-up", "data-follow-up": "", text: text});
    b.addEventListener("click", function () { sendText(text); });
    group.appendChild(b);
  });
  return group;
}

// propose_setup's cards (capabilities/follow_ups): a routine opens this agent's Triggers, an agent New agent;
// a connection names a catalog service (its logo and Connect, cards.js) or opens the MCP servers page.
function setupCards(cards) {
  const group = h("div", {class: "setup-cards", "data-setup-cards": ""});
  cards.forEach(function (c) {
    const card = h("section", {class: "setup-card", "data-setup-card": c.kind}, [
      h("span", {class: "badge", text: T["setup_" + c.kind] || c.kind}),
      h("h4", {text: c.title}),
      c.detail ? h("p", {class: "muted", text: c.detail}) : null,
      c.schedule ? h("p", {class: "muted", text: c.schedule}) : null,
    ]);
    if (c.kind === "agent" && c.setup && c._from.run) { card.appendChild(proposalCard(c)); group.appendChild(card); return; }
    if (c.kind === "agent") { card.appendChild(askArchitect(c)); group.appendChild(card); return; }
    const href = c.kind === "trigger" && S.agent_id ? "/agents/" + S.agent_id + "/triggers/" : "";
    if (href) card.appendChild(h("a", {class: "button", href: href, text: T["setup_open_" + c.kind]}));
    if (c.kind === "connection") card.appendChild(c.service
      ? connectionCard({service: c.service, back: location.pathname + location.search, strings: {connect: T.setup_connect}})
      : h("a", {class: "button", href: "/connections/#mcp-title", text: T.setup_open_connection}));
    group.appendChild(card);
  });
  return group;
}

// A delegation is a panel, not a pause: the specialist's own text and steps, its name, status and cost.
// A specialist that delegates in turn is drawn inside the panel of the delegation it was made in.
function delegationPanel(part, siblings) {
  const status = part.status || "running";
  const head = [h("span", {class: "delegation-name", "data-delegation-name": "", text: fill(T.delegation_title, {name: part.name})}),
              h("span", {class: "delegation-status", "data-delegation-status": status,
                         text: T["delegation_" + status] || status})];
  if (part.usage) {
    head.push(h("span", {class: "delegation-usage muted", "data-delegation-usage": "",
      text: fill(T.delegation_usage, {tokens: Number(part.usage.input_tokens || 0) + Number(part.usage.output_tokens || 0),
                                      cost: money(part.usage.cost_usd)})}));
  }
  const inner = h("div", {class: "delegation-body"});
  let batch = [];
  function flush() { if (batch.length) { inner.appendChild(rail(batch)); batch = []; } }
  (part.parts || []).forEach(function (p) {
    if (p.type === "tool") {
      batch.push({id: p.tool_call_id, name: p.tool_name, args: p.args || {}, result: p.result, status: p.status});
      return;
    }
    flush();
    if (p.type === "text") {
      const md = markdown(p.text);
      md.className = "answer markdown";
      md.setAttribute("data-part", "text");
      inner.appendChild(md);
    }
    else if (p.type === "thinking") inner.appendChild(h("details", {class: "thinking"}, [h("summary", {text: T.thinking}),
                                                                                     h("div", {class: "thinking-text", text: p.text})]));
  });
  flush();
  (siblings || []).forEach(function (child) {
    if (child.type === "delegation" && child.parent_task_id === part.task_id) inner.appendChild(delegationPanel(child, siblings));
  });
  return h("section", {class: "delegation status-" + status, "data-delegation": part.task_id,
                       "data-depth": String(part.depth || 1)}, [h("header", {class: "delegation-head"}, head), inner]);
}
function findDelegation(taskId) {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    const parts = state.turns[i].parts || [];
    for (let j = 0; j < parts.length; j++) if (parts[j].type === "delegation" && parts[j].task_id === taskId) return parts[j];
  }
  return null;
}
export function delegationFor(d) {
  let found = findDelegation(d.task_id);
  if (found) return found;
  found = {type: "delegation", task_id: d.task_id, parent_task_id: d.parent_task_id || null, depth: d.depth || 1,
           name: d.name || "", status: "running", parts: [], usage: null};
  liveTurn().parts.push(found);
  return found;
}


// ---------------------------------------------------------------- a missing capability

// The card is drawn from the request_capability call itself, so a reopened conversation shows it again. The
// capability_missing frame's data (name, offers, whether this person may enable it) is used when it came; a
// conversation reopened later knows only the call's arguments, and whether this person may edit the agent
// (S.agents[].can_edit).
function capabilityCard(args) {
  const id = String(args.capability_id);
  const agent = currentAgent();
  const data = state.capabilityCards[id] || {capability: {id: id, name: window.AgenticTurn.humanize(id)}, reason: args.reason,
                                             agent_id: S.agent_id, can_enable: !!(agent && agent.can_edit)};
  const capability = data.capability || {id: id};
  const action = data.can_enable ? "enable" : "request";
  return sharedCapabilityCard({
    capability, reason: data.reason || args.reason, canEnable: data.can_enable, outcome: state.capabilityOutcomes[id],
    url: "/api/v1/agents/" + encodeURIComponent(data.agent_id || S.agent_id) + "/capabilities/" +
         encodeURIComponent(capability.id) + "/" + action,
    strings: {missing: T.capability_missing, enable: T.capability_enable, ask: T.capability_ask},
    onOutcome(outcome) {
      state.capabilityOutcomes = Object.assign({}, state.capabilityOutcomes, {[id]: outcome});  // a new version: the foot is drawn again
      schedule();
    },
  });
}
