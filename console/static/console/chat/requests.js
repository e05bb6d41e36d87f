// What a running turn waits for from a person: tool calls to approve (with the decision posted, and the run
// followed after it) and the agent's questions, one at a time, with a review before the answers are sent.
import {h, fill, post} from "../dom.js";
import {approvalCard} from "../cards.js";
import {S, T, els, state, questionIndex, answers, answerValues, conversationUrl} from "./state.js";
import {schedule, showNotice} from "./view.js";
import {socketSend, reconcile} from "./stream.js";
import {setBusy} from "./composer.js";


function approvalPanel(item) {
  const title = fill(T.approval_title, {name: item.tool_name});
  return approvalCard({
    approvalId: item.approval_id, toolName: item.tool_name, args: item.args || {}, title, canDecide: S.can_decide,
    strings: {approve: T.approve, reject: T.reject, cannot: T.approval_cannot},
    onDecide: (decision, card) => decide(item, decision, card),
  });
}

function decide(item, decision) {
  post(S.urls.decide.replace("00000000-0000-0000-0000-000000000000", item.approval_id), new URLSearchParams({decision}))
    .then(function ({ok, json}) {
      const res = {ok, data: json};
      state.pending.approvals = state.pending.approvals.filter(function (a) { return a.approval_id !== item.approval_id; });
      if (res.ok && res.data.already_decided) {
        // A card left over from before a decision made elsewhere: the answer says what was decided ("This call
        // was already approved."); the view follows the run from there instead of reporting a failure.
        showNotice(res.data.message || (res.data.status === "approved" ? T.approved : T.rejected));
        state.activeRunId = item.run_id;
        socketSend({type: "watch", run_id: item.run_id});
        reconcile();
        return;
      }
      if (!res.ok) { showNotice(res.data.error ? res.data.error.message : "error"); schedule(); return; }
      showNotice(decision === "approve" ? T.approved : T.rejected);
      state.activeRunId = item.run_id;
      socketSend({type: "watch", run_id: item.run_id});
      watchRun(item.run_id);
      schedule();
    });
}

function questionCard(item) {
  const qs = Array.isArray(item.questions) ? item.questions : [item.questions];
  const at = questionIndex[item.question_id] === undefined ? 0 : questionIndex[item.question_id];
  const given = answers[item.question_id] || (answers[item.question_id] = []);
  const values = answerValues[item.question_id] || (answerValues[item.question_id] = []);
  const card = h("section", {class: "question-card", "data-question": item.question_id, "aria-live": "polite"});
  if (at === "summary") {
    card.appendChild(h("h3", {text: T.review}));
    const list = h("dl", {class: "answers-summary"});
    qs.forEach(function (q, i) {
      list.appendChild(h("dt", {text: q.question || q.header || ""}));
      list.appendChild(h("dd", {text: given[i] || ""}));
    });
    card.appendChild(list);
    const back = h("button", {type: "button", class: "button", text: T.back});
    back.addEventListener("click", function () { questionIndex[item.question_id] = qs.length - 1; schedule(); });
    const send = h("button", {type: "button", class: "button primary", "data-send-answers": "", text: T.send_answers});
    send.addEventListener("click", function () {
      socketSend({type: "ask_user_response", run_id: item.run_id, answers: values.slice(0, qs.length)});
      state.pending.questions = state.pending.questions.filter(function (q) { return q.question_id !== item.question_id; });
      state.activeRunId = item.run_id;
      setBusy(true);
      schedule();
    });
    card.appendChild(h("div", {class: "actions"}, [back, send]));
    return card;
  }
  const q = qs[at] || {};
  const form = h("form", {class: "question-form"});
  const legendId = "q-" + item.question_id + "-" + at;
  form.appendChild(h("p", {class: "muted", text: fill(T.question_of, {i: at + 1, n: qs.length})}));
  const fieldset = h("fieldset", {}, [h("legend", {id: legendId, text: (q.header ? q.header + " — " : "") + (q.question || "")})]);
  (q.options || []).forEach(function (opt, oi) {
    const label = typeof opt === "string" ? opt : opt.label;
    const id = legendId + "-o" + oi;
    const input = h("input", {type: q.multi_select ? "checkbox" : "radio", name: "choice", id: id, value: label,
                            checked: (given[at] || "").split(", ").indexOf(label) >= 0 ? "" : null});
    fieldset.appendChild(h("div", {class: "option"}, [input, h("label", {for: id, text: label}),
      opt.description ? h("span", {class: "muted", text: " " + opt.description}) : null]));
  });
  const ownId = legendId + "-own";
  fieldset.appendChild(h("label", {for: ownId, class: "own-label", text: T.own_answer}));
  fieldset.appendChild(h("input", {type: "text", id: ownId, name: "own", class: "own-answer"}));
  form.appendChild(fieldset);
  const actions = h("div", {class: "actions"});
  if (at > 0) {
    const prev = h("button", {type: "button", class: "button", text: T.back});
    prev.addEventListener("click", function () { questionIndex[item.question_id] = at - 1; schedule(); });
    actions.appendChild(prev);
  }
  actions.appendChild(h("button", {type: "submit", class: "button primary", "data-next": "",
                                   text: at === qs.length - 1 ? T.review : T.next}));
  form.appendChild(actions);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const own = form.querySelector(".own-answer").value.trim();
    const chosen = Array.prototype.map.call(form.querySelectorAll("input[name=choice]:checked"), function (i) { return i.value; });
    if (!own && !chosen.length) return;
    given[at] = own || chosen.join(", ");
    // The answer shape the service takes: a label, a list of labels (multi_select), or {custom: text}.
    values[at] = own ? {custom: own} : (q.multi_select ? chosen : chosen[0]);
    questionIndex[item.question_id] = at === qs.length - 1 ? "summary" : at + 1;
    schedule();
  });
  card.appendChild(form);
  return card;
}

// A card is built again only when what it shows changes (another question of the form, the summary): every
// frame of a running turn renders, and a card built anew under the pointer loses the click that was landing on
// it, and the answer being typed in it.
let requestNodes = {};
export function renderRequests() {
  if (!els.requests) return;
  const focused = document.activeElement && els.requests.contains(document.activeElement);
  const next = {}, nodes = [];
  function keep(key, build) {
    const node = requestNodes[key] || build();
    next[key] = node;
    nodes.push(node);
  }
  state.pending.approvals.forEach(function (a) { keep("a:" + a.approval_id, function () { return approvalPanel(a); }); });
  state.pending.questions.slice(0, 1).forEach(function (q) {
    const at = questionIndex[q.question_id] === undefined ? 0 : questionIndex[q.question_id];
    keep("q:" + q.question_id + ":" + at, function () { return questionCard(q); });
  });
  requestNodes = next;
  const same = nodes.length === els.requests.children.length &&
             nodes.every(function (node, i) { return els.requests.children[i] === node; });
  if (same) return;
  els.requests.replaceChildren.apply(els.requests, nodes);
  if (focused && !els.requests.contains(document.activeElement)) {
    const first = els.requests.querySelector("input, button");
    if (first) first.focus();
  }
}



// A decision made on a reopened conversation: this socket never joined that run, so follow it by reading.
function watchRun(runId) {
  const started = Date.now();
  function tick() {
    if (Date.now() - state.lastFrameAt < 1500) { setTimeout(tick, 1000); return; }
    fetch(conversationUrl(S.urls.turns), {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (data) {
        const done = data.turns.some(function (t) {
          return t.run_id === runId && t.usage && ["queued", "running"].indexOf(t.usage.status) < 0 &&
                 (t.usage.status !== "awaiting_approval" || data.pending.approvals.length);
        });
        if (Date.now() - state.lastFrameAt >= 1500) { state.turns = data.turns; state.pending = data.pending; state.lastUsage = data.usage || state.lastUsage; schedule(); }
        if (done) { setBusy(false); return; }
        if (Date.now() - started < 120000) setTimeout(tick, 1000);
      });
  }
  setTimeout(tick, 1000);
}
