// The web chat (/chat). One model of a turn, drawn by the renderer every surface shares (turn.js), live from
// socket frames and reopened from messages.parts — so a reopened turn looks exactly like the live one. This file
// keeps what only web chat has: the socket's fold of frames, delegations, approvals and questions, usage, files.
(function () {
  "use strict";

  var root = document.querySelector("[data-chat]");
  var stateNode = document.getElementById("chat-state");
  if (!root || !stateNode) return;
  var S = JSON.parse(stateNode.textContent);
  var T = S.strings;
  var transcriptEl = root.querySelector("[data-transcript]");
  var requestsEl = root.querySelector("[data-requests]");
  var usageEl = root.querySelector("[data-usage]");
  var composer = root.querySelector("[data-composer]");
  var textarea = root.querySelector("[data-composer-text]");
  var stopButton = root.querySelector("[data-stop]");
  var picker = root.querySelector("[data-agent-picker]");

  var turns = S.turns || [];
  var pending = S.pending || {approvals: [], questions: []};
  var activeRunId = null;
  var pendingKind = null; // a new part starts at the next delta (part_start)
  var openSteps = {};     // tool call id -> true/false chosen by the reader (or opened by the client)
  var questionIndex = {}; // question id -> index being answered; "summary" for the review
  var answers = {};       // question id -> [answers as shown in the summary]
  var answerValues = {};  // question id -> [answers as sent]
  var lastUsage = S.usage || null;
  var followUpsByRun = {}; // run id -> next steps that arrived live (a reconcile fetched earlier must not drop them)
  var renderQueued = false;
  var busy = false;       // a turn is running (Send disabled, Stop offered)
  var drawing = window.AgenticTurn.drawings(); // a drawing's call grows while its arguments stream (turn.js)
  var liveViews = {};     // tool call id -> its browse's live view path (browser_live), for a call not drawn yet
  var needsPerson = {};   // tool call id -> why only a person can go on (browser_needs_person), likewise

  // ---------------------------------------------------------------- helpers

  function fill(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, key) { return values[key] !== undefined ? values[key] : ""; })
      .replace(/%%/g, "%");
  }
  function h(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "html") node.innerHTML = attrs[k];
      else if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false) node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }
  var pretty = window.AgenticTurn.pretty;
  function csrf() {
    var m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }
  function money(value) {
    var n = Number(value || 0);
    return n < 0.01 && n > 0 ? n.toFixed(4) : n.toFixed(2);
  }
  function currentAgent() {
    var id = S.agent_id;
    for (var i = 0; i < S.agents.length; i++) if (S.agents[i].id === id) return S.agents[i];
    return null;
  }

  // ---------------------------------------------------------------- the one turn renderer (turn.js)

  // A file the agent wrote is a card naming it, with Open and Download. The path is resolved against the
  // conversation's own listing, not trusted from the arguments (write_file("a.md") writes /workspace/a.md);
  // with no match the card is drawn without controls that would fail.
  var workspaceFiles = null;
  var workspaceFill = null;  // percent, from the conversation's listing (null: no workspace)
  function isFileCall(call) {
    return (call.name === "write_file" || call.name === "edit_file") && call.status === "ok" &&
      call.args && typeof call.args.path === "string";
  }
  function resolveFile(path) {
    if (!workspaceFiles) return null;
    var candidates = path.charAt(0) === "/" ? [path] : ["/workspace/" + path.replace(/^\.\//, ""), "/" + path];
    return candidates.filter(function (c) { return workspaceFiles.indexOf(c) >= 0; })[0] || null;
  }
  function fileCard(call) {
    if (!isFileCall(call)) return null;
    var found = resolveFile(call.args.path);
    var name = (found || call.args.path).replace(/^\/workspace\//, "");
    var card = h("div", {class: "file-card", "data-file-card": found || ""}, [h("span", {class: "file-name", text: name})]);
    if (found) {
      var open = h("button", {type: "button", class: "link", text: T.files_open});
      open.addEventListener("click", function () { openFile({path: found}); });
      card.appendChild(h("span", {class: "file-actions"}, [open,
        h("a", {href: workspaceUrl("/raw", found), download: "", text: T.files_download})]));
    }
    return h("div", {}, [card, h("pre", {class: "result-text", text: pretty(call.result)})]);
  }

  var renderer = window.AgenticTurn.create({
    strings: T, phrases: S.phrases, fileCard: fileCard, openSteps: openSteps, onChange: function () { renderTranscript(); },
    part: function (part, turn) {
      if (part.type !== "delegation" || part.parent_task_id) return null; // a child is drawn inside its parent's panel
      return delegationPanel(part, turn.parts);
    },
    head: function (turn) {
      var name = turn.agent || "";
      return h("header", {class: "turn-head"}, [h("span", {class: "avatar", "aria-hidden": "true", text: name.charAt(0).toUpperCase()}),
                                                h("h3", {class: "agent-name", text: name})]);
    },
    foot: turnFoot,
    actions: messageActions,
    user: userTurn,
    liveLinks: true,
    // What a turn's foot depends on besides the turn itself: next steps that arrived live, the workspace listing,
    // and whether it is the last message of its kind while nothing runs (which offers Regenerate / Edit).
    version: function (turn) {
      return [followUpsByRun[turn.run_id] || null, workspaceFiles, capabilityCards, capabilityOutcomes,
              lastOfItsKind(turn) && !busy];
    },
  });
  var RT = renderer.strings;  // the renderer's strings: the server's, with English defaults for newer labels
  var markdown = renderer.markdown;
  var rail = renderer.rail;

  // ---------------------------------------------------------------- message actions

  function lastOfItsKind(turn) {
    for (var i = turns.length - 1; i >= 0; i--) if (turns[i].role === turn.role) return turns[i] === turn;
    return false;
  }
  function lastUserText(before) {
    var end = before === undefined ? turns.length : before;
    for (var i = end - 1; i >= 0; i--) if (turns[i].role === "user") return turns[i].text || "";
    return "";
  }
  // Copy on every message; on the last answer Regenerate (the same prompt again, as a new turn through the one
  // send path), on the person's last message Edit and resend (its text back in the composer). Neither while a
  // turn runs: one turn at a time.
  function messageActions(turn) {
    var out = [];
    if (renderer.messageText(turn)) out.push(renderer.copyButton(function () { return renderer.messageText(turn); }));
    if (!composer || busy || !lastOfItsKind(turn)) return out;
    if (turn.role === "assistant" && turns[turns.length - 1] === turn) {
      var prompt = lastUserText(turns.indexOf(turn));
      if (prompt) {
        var again = h("button", {type: "button", class: "link turn-action", "data-action": "regenerate", text: RT.regenerate});
        again.addEventListener("click", function () { if (!busy) sendText(prompt); });
        out.push(again);
      }
    }
    if (turn.role === "user") {
      var edit = h("button", {type: "button", class: "link turn-action", "data-action": "edit", text: RT.edit_message,
                             title: RT.edit_resend});  // named "Edit": a name with "send" would be a second Send
      edit.addEventListener("click", editLastMessage);
      out.push(edit);
    }
    return out;
  }
  function editLastMessage() {
    var text = lastUserText();
    if (!textarea || !text) return false;
    textarea.value = text;
    textarea.focus();
    textarea.setSelectionRange(text.length, text.length);
    return true;
  }

  // ---------------------------------------------------------------- turns

  // The person's message, with the files it carried (name, type, size) above its text — live and reopened alike.
  function userTurn(turn) {
    var files = turn.attachments || [];
    var actions = messageActions(turn);
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
    var out = [];
    if (turn.error) out.push(h("p", {class: "turn-error", role: "alert", text: fill(T.error, {message: turn.error})}));
    else if (turn.stopped || (turn.usage && turn.usage.status === "cancelled")) {
      out.push(h("p", {class: "turn-stopped muted", "data-stopped": "", text: T.stopped}));
    }
    var cards = [];
    (turn.parts || []).forEach(function (p) {
      var r = p.type === "tool" && p.call.name === "propose_setup" ? p.call.result : null;
      if (r && r.cards) cards = cards.concat(r.cards);
    });
    if (cards.length) out.push(setupCards(cards.slice(0, 3)));
    (turn.parts || []).forEach(function (p) {
      // The card is drawn from the request_capability call itself, so a reopened conversation shows it again.
      if (p.type === "tool" && p.call.name === "request_capability" && p.call.status === "ok" && p.call.args &&
          p.call.args.capability_id) out.push(capabilityCard(p.call.args));
    });
    var steps = turn.follow_ups && turn.follow_ups.length ? turn.follow_ups : followUpsByRun[turn.run_id];
    if (steps && steps.length) out.push(followUps(steps));
    if (turn.usage && turn.usage.status && turn.usage.status !== "running" && turn.usage.status !== "queued") {
      var cost = fill(turn.usage.cost_is_partial ? T.cost_partial : T.cost, {cost: money(turn.usage.cost_usd)});
      out.push(h("p", {class: "turn-usage", "data-turn-usage": ""}, [
        h("span", {"data-tokens": "", text: fill(T.tokens, {input: turn.usage.input_tokens, output: turn.usage.output_tokens})}),
        " · ", h("span", {"data-cost": "", text: cost}),
      ]));
    }
    return out;
  }

  // Suggested next steps (capabilities/follow_ups): buttons under the answer; a click sends the text.
  function followUps(steps) {
    var group = h("div", {class: "follow-ups", role: "group", "aria-label": T.follow_ups, "data-follow-ups": ""});
    steps.forEach(function (text) {
      var b = h("button", {type: "button", class: "button follow-up", "data-follow-up": "", text: text});
      b.addEventListener("click", function () { sendText(text); });
      group.appendChild(b);
    });
    return group;
  }

  // propose_setup's cards (capabilities/follow_ups): a routine opens this agent's Triggers, an agent New agent;
  // a connection names the service (this console has no connection page to open yet).
  function setupCards(cards) {
    var group = h("div", {class: "setup-cards", "data-setup-cards": ""});
    cards.forEach(function (c) {
      var card = h("section", {class: "setup-card", "data-setup-card": c.kind}, [
        h("span", {class: "badge", text: T["setup_" + c.kind] || c.kind}),
        h("h4", {text: c.title}),
        c.detail ? h("p", {class: "muted", text: c.detail}) : null,
        c.schedule ? h("p", {class: "muted", text: c.schedule}) : null,
      ]);
      var href = c.kind === "trigger" && S.agent_id ? "/agents/" + S.agent_id + "/triggers/" : c.kind === "agent" ? "/agents/new" : "";
      if (href) card.appendChild(h("a", {class: "button", href: href, text: T["setup_open_" + c.kind]}));
      group.appendChild(card);
    });
    return group;
  }

  // A delegation is a panel, not a pause: the specialist's own text and steps, its name, status and cost.
  // A specialist that delegates in turn is drawn inside the panel of the delegation it was made in.
  function delegationPanel(part, siblings) {
    var status = part.status || "running";
    var head = [h("span", {class: "delegation-name", "data-delegation-name": "", text: fill(T.delegation_title, {name: part.name})}),
                h("span", {class: "delegation-status", "data-delegation-status": status,
                           text: T["delegation_" + status] || status})];
    if (part.usage) {
      head.push(h("span", {class: "delegation-usage muted", "data-delegation-usage": "",
        text: fill(T.delegation_usage, {tokens: Number(part.usage.input_tokens || 0) + Number(part.usage.output_tokens || 0),
                                        cost: money(part.usage.cost_usd)})}));
    }
    var inner = h("div", {class: "delegation-body"});
    var batch = [];
    function flush() { if (batch.length) { inner.appendChild(rail(batch)); batch = []; } }
    (part.parts || []).forEach(function (p) {
      if (p.type === "tool") {
        batch.push({id: p.tool_call_id, name: p.tool_name, args: p.args || {}, result: p.result, status: p.status});
        return;
      }
      flush();
      if (p.type === "text") {
        var md = markdown(p.text);
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
    for (var i = turns.length - 1; i >= 0; i--) {
      var parts = turns[i].parts || [];
      for (var j = 0; j < parts.length; j++) if (parts[j].type === "delegation" && parts[j].task_id === taskId) return parts[j];
    }
    return null;
  }
  function delegationFor(d) {
    var found = findDelegation(d.task_id);
    if (found) return found;
    found = {type: "delegation", task_id: d.task_id, parent_task_id: d.parent_task_id || null, depth: d.depth || 1,
             name: d.name || "", status: "running", parts: [], usage: null};
    liveTurn().parts.push(found);
    return found;
  }

  function renderTranscript() {
    renderQueued = false;
    var atBottom = transcriptEl.scrollHeight - transcriptEl.scrollTop - transcriptEl.clientHeight < 80;
    renderer.render(transcriptEl, turns);  // keyed: only what changed is drawn again
    if (atBottom) transcriptEl.scrollTop = transcriptEl.scrollHeight;
    renderRequests();
    renderUsage();
  }
  function schedule() {
    if (renderQueued) return;
    renderQueued = true;
    window.requestAnimationFrame(renderTranscript);
  }

  // ---------------------------------------------------------------- a missing capability

  // The capability_missing frame's card data by capability id (name, offers, whether this person may enable it);
  // a conversation reopened later knows only the call's arguments, and whether this person may edit the agent
  // (S.agents[].can_edit).
  var capabilityCards = {}, capabilityOutcomes = {};
  function capabilityCard(args) {
    var id = String(args.capability_id);
    var agent = currentAgent();
    var data = capabilityCards[id] || {capability: {id: id, name: window.AgenticTurn.humanize(id)}, reason: args.reason,
                                        agent_id: S.agent_id, can_enable: !!(agent && agent.can_edit)};
    var cap = data.capability || {};
    var action = data.can_enable ? "enable" : "request";
    var outcome = capabilityOutcomes[id];
    var button = h("button", {type: "button", class: "button small primary", "data-capability-action": action,
                              text: data.can_enable ? T.capability_enable : T.capability_ask,
                              disabled: outcome && outcome.ok ? "" : null});
    button.addEventListener("click", function () {
      button.disabled = true;
      fetch("/api/v1/agents/" + encodeURIComponent(data.agent_id || S.agent_id) + "/capabilities/" +
            encodeURIComponent(cap.id) + "/" + action, {
        method: "POST", credentials: "same-origin", body: JSON.stringify({reason: data.reason || args.reason || ""}),
        headers: {"X-CSRFToken": csrf(), "Content-Type": "application/json", "Accept": "application/json"},
      }).then(function (r) { return r.json().then(function (j) { return {ok: r.ok, j: j}; }); })
        .then(function (res) {
          capabilityOutcomes[id] = {ok: res.ok, text: res.ok ? (res.j.message || "") : ((res.j.error || {}).message || "")};
          capabilityOutcomes = Object.assign({}, capabilityOutcomes);  // a new version: the foot is drawn again
          schedule();
        });
    });
    return h("section", {class: "capability-card", "data-capability-card": cap.id}, [
      h("p", {text: T.capability_missing}),
      h("strong", {text: cap.name || cap.id}),
      cap.offers ? h("p", {class: "muted", text: cap.offers}) : null,
      data.reason || args.reason ? h("p", {text: data.reason || args.reason}) : null,
      button,
      outcome ? h("p", {class: outcome.ok ? "muted" : "field-error", "data-capability-result": outcome.ok ? "ok" : "error",
                        role: "status", text: outcome.text}) : null,
    ]);
  }

  // ---------------------------------------------------------------- approvals and questions

  function approvalPanel(item) {
    var panel = h("section", {class: "approval-panel", "data-approval": item.approval_id,
                              "aria-label": fill(T.approval_title, {name: item.tool_name})}, [
      h("h3", {text: fill(T.approval_title, {name: item.tool_name})}),
      h("pre", {class: "approval-args", text: pretty(item.args)}),
    ]);
    if (!S.can_decide) { panel.appendChild(h("p", {class: "muted", text: T.approval_cannot})); return panel; }
    var actions = h("div", {class: "actions"});
    [["approve", T.approve, "button primary"], ["reject", T.reject, "button danger"]].forEach(function (d) {
      var b = h("button", {type: "button", class: d[2], "data-decision": d[0], text: d[1]});
      b.addEventListener("click", function () { decide(item, d[0], panel); });
      actions.appendChild(b);
    });
    panel.appendChild(actions);
    return panel;
  }

  function decide(item, decision, panel) {
    panel.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    var body = new URLSearchParams({decision: decision});
    fetch(S.urls.decide.replace("00000000-0000-0000-0000-000000000000", item.approval_id), {
      method: "POST", body: body, credentials: "same-origin",
      headers: {"X-CSRFToken": csrf(), "Accept": "application/json"},
    }).then(function (r) { return r.json().then(function (data) { return {ok: r.ok, status: r.status, data: data}; }); })
      .then(function (res) {
        pending.approvals = pending.approvals.filter(function (a) { return a.approval_id !== item.approval_id; });
        if (res.ok && res.data.already_decided) {
          // A card left over from before a decision made elsewhere: the answer says what was decided ("This call
          // was already approved."); the view follows the run from there instead of reporting a failure.
          showNotice(res.data.message || (res.data.status === "approved" ? T.approved : T.rejected));
          activeRunId = item.run_id;
          socketSend({type: "watch", run_id: item.run_id});
          reconcile();
          return;
        }
        if (!res.ok) { showNotice(res.data.error ? res.data.error.message : "error"); schedule(); return; }
        showNotice(decision === "approve" ? T.approved : T.rejected);
        activeRunId = item.run_id;
        socketSend({type: "watch", run_id: item.run_id});
        watchRun(item.run_id);
        schedule();
      });
  }

  function questionCard(item) {
    var qs = Array.isArray(item.questions) ? item.questions : [item.questions];
    var at = questionIndex[item.question_id] === undefined ? 0 : questionIndex[item.question_id];
    var given = answers[item.question_id] || (answers[item.question_id] = []);
    var values = answerValues[item.question_id] || (answerValues[item.question_id] = []);
    var card = h("section", {class: "question-card", "data-question": item.question_id, "aria-live": "polite"});
    if (at === "summary") {
      card.appendChild(h("h3", {text: T.review}));
      var list = h("dl", {class: "answers-summary"});
      qs.forEach(function (q, i) {
        list.appendChild(h("dt", {text: q.question || q.header || ""}));
        list.appendChild(h("dd", {text: given[i] || ""}));
      });
      card.appendChild(list);
      var back = h("button", {type: "button", class: "button", text: T.back});
      back.addEventListener("click", function () { questionIndex[item.question_id] = qs.length - 1; schedule(); });
      var send = h("button", {type: "button", class: "button primary", "data-send-answers": "", text: T.send_answers});
      send.addEventListener("click", function () {
        socketSend({type: "ask_user_response", run_id: item.run_id, answers: values.slice(0, qs.length)});
        pending.questions = pending.questions.filter(function (q) { return q.question_id !== item.question_id; });
        activeRunId = item.run_id;
        setBusy(true);
        schedule();
      });
      card.appendChild(h("div", {class: "actions"}, [back, send]));
      return card;
    }
    var q = qs[at] || {};
    var form = h("form", {class: "question-form"});
    var legendId = "q-" + item.question_id + "-" + at;
    form.appendChild(h("p", {class: "muted", text: fill(T.question_of, {i: at + 1, n: qs.length})}));
    var fieldset = h("fieldset", {}, [h("legend", {id: legendId, text: (q.header ? q.header + " — " : "") + (q.question || "")})]);
    (q.options || []).forEach(function (opt, oi) {
      var label = typeof opt === "string" ? opt : opt.label;
      var id = legendId + "-o" + oi;
      var input = h("input", {type: q.multi_select ? "checkbox" : "radio", name: "choice", id: id, value: label,
                              checked: (given[at] || "").split(", ").indexOf(label) >= 0 ? "" : null});
      fieldset.appendChild(h("div", {class: "option"}, [input, h("label", {for: id, text: label}),
        opt.description ? h("span", {class: "muted", text: " " + opt.description}) : null]));
    });
    var ownId = legendId + "-own";
    fieldset.appendChild(h("label", {for: ownId, class: "own-label", text: T.own_answer}));
    fieldset.appendChild(h("input", {type: "text", id: ownId, name: "own", class: "own-answer"}));
    form.appendChild(fieldset);
    var actions = h("div", {class: "actions"});
    if (at > 0) {
      var prev = h("button", {type: "button", class: "button", text: T.back});
      prev.addEventListener("click", function () { questionIndex[item.question_id] = at - 1; schedule(); });
      actions.appendChild(prev);
    }
    actions.appendChild(h("button", {type: "submit", class: "button primary", "data-next": "",
                                     text: at === qs.length - 1 ? T.review : T.next}));
    form.appendChild(actions);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var own = form.querySelector(".own-answer").value.trim();
      var chosen = Array.prototype.map.call(form.querySelectorAll("input[name=choice]:checked"), function (i) { return i.value; });
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
  var requestNodes = {};
  function renderRequests() {
    if (!requestsEl) return;
    var focused = document.activeElement && requestsEl.contains(document.activeElement);
    var next = {}, nodes = [];
    function keep(key, build) {
      var node = requestNodes[key] || build();
      next[key] = node;
      nodes.push(node);
    }
    pending.approvals.forEach(function (a) { keep("a:" + a.approval_id, function () { return approvalPanel(a); }); });
    pending.questions.slice(0, 1).forEach(function (q) {
      var at = questionIndex[q.question_id] === undefined ? 0 : questionIndex[q.question_id];
      keep("q:" + q.question_id + ":" + at, function () { return questionCard(q); });
    });
    requestNodes = next;
    var same = nodes.length === requestsEl.children.length &&
               nodes.every(function (node, i) { return requestsEl.children[i] === node; });
    if (same) return;
    requestsEl.replaceChildren.apply(requestsEl, nodes);
    if (focused && !requestsEl.contains(document.activeElement)) {
      var first = requestsEl.querySelector("input, button");
      if (first) first.focus();
    }
  }

  // ---------------------------------------------------------------- usage strip

  function renderUsage() {
    if (!usageEl) return;
    usageEl.innerHTML = "";
    var agent = currentAgent();
    if (agent) {
      usageEl.appendChild(h("span", {"data-agent-budget": "", text: agent.budget.limit === null ? T.agent_no_budget :
        fill(T.agent_budget, {spent: money(agent.budget.spent), limit: money(agent.budget.limit)})}));
    }
    var org = S.org_budget;
    if (org.limit !== null && Number(org.limit) > 0 && Number(org.spent) / Number(org.limit) >= 0.8) {
      usageEl.appendChild(h("span", {"data-org-budget": "", text: fill(T.org_budget, {
        percent: Math.round(Number(org.spent) / Number(org.limit) * 100), limit: money(org.limit)})}));
    }
    if (lastUsage) {
      usageEl.appendChild(h("span", {"data-last-usage": "", text: fill(T.tokens, {input: lastUsage.input_tokens,
        output: lastUsage.output_tokens}) + " · " + fill(T.cost, {cost: money(lastUsage.cost_usd)})}));
    }
    if (workspaceFill !== null) {  // the workspace counts like the money: a full one refuses writes
      usageEl.appendChild(h("span", {"data-workspace-fill": "", text: fill(T.workspace_fill, {percent: workspaceFill})}));
    }
  }

  function showNotice(text) {
    if (!requestsEl) return;
    var note = h("p", {class: "notice", role: "status", text: text});
    requestsEl.parentNode.insertBefore(note, requestsEl);
    setTimeout(function () { note.remove(); }, 4000);
  }

  // A new conversation joins the list at once, so it can be reopened without a reload.
  function addConversationLink(id, title) {
    var aside = document.querySelector(".conversations");
    if (!aside) return;
    var list = aside.querySelector(".conversation-list");
    if (!list) {
      var empty = aside.querySelector(".empty");
      if (empty) empty.remove();
      list = h("ul", {class: "conversation-list"});
      aside.appendChild(list);
    }
    list.querySelectorAll("[aria-current]").forEach(function (a) { a.removeAttribute("aria-current"); });
    var agent = currentAgent();
    list.insertBefore(h("li", {}, [h("a", {href: S.urls.chat + id + "/", "aria-current": "page"}, [
      h("span", {class: "conv-title", text: title || (agent ? agent.name : "")}),
      h("span", {class: "conv-meta", text: agent ? agent.name : ""}),
    ])]), list.firstChild);
  }

  // ---------------------------------------------------------------- the socket

  var socket = null, queue = [];
  function connect() {
    socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + S.urls.socket);
    socket.addEventListener("open", function () { queue.splice(0).forEach(function (m) { socket.send(m); }); });
    socket.addEventListener("message", function (event) { onFrame(JSON.parse(event.data)); });
    socket.addEventListener("close", function () { socket = null; });
  }
  function socketSend(payload) {
    var text = JSON.stringify(payload);
    if (!socket) connect();
    if (socket.readyState === 1) socket.send(text); else queue.push(text);
  }

  function liveTurn() {
    var last = turns[turns.length - 1];
    if (last && last.role === "assistant" && last.run_id === activeRunId) return last;
    var agent = currentAgent();
    var turn = {role: "assistant", run_id: activeRunId, agent: agent ? agent.name : "", parts: [], usage: null, live: true};
    turns.push(turn);
    return turn;
  }
  function findCall(id) {
    for (var i = turns.length - 1; i >= 0; i--) {
      var parts = turns[i].parts || [];
      for (var j = 0; j < parts.length; j++) if (parts[j].type === "tool" && parts[j].call.id === id) return parts[j].call;
    }
    return null;
  }
  function addText(kind, content) {
    if (!content) return;
    var turn = liveTurn();
    var last = turn.parts[turn.parts.length - 1];
    if (last && last.type === kind && pendingKind !== kind) last.text += content;
    else turn.parts.push({type: kind, text: content});
    pendingKind = null;
  }

  var lastFrameAt = 0;
  function onFrame(frame) {
    var d = frame.data || {};
    lastFrameAt = Date.now();
    if (["model_request_start", "part_start", "text_delta", "tool_call"].indexOf(frame.type) >= 0) setBusy(true);
    if (frame.type === "part_start" || frame.type === "tool_call_delta" || frame.type === "tool_call") {
      drawing.apply(liveTurn().parts, frame);
    }
    // "Summarizing…" (capabilities/compaction) lasts until the next frame of the run.
    if (frame.type !== "compaction") turns.forEach(function (t) { if (t.compacting) t.compacting = false; });
    switch (frame.type) {
      case "compaction":
        if (d.status === "summarizing") liveTurn().compacting = true;
        break;
      case "capability_missing":
        if (d.capability && d.capability.id) {
          capabilityCards = Object.assign({}, capabilityCards);
          capabilityCards[d.capability.id] = d;
        }
        break;
      case "approval_decided":
        // Decided here, on the Approvals page or anywhere else: every open view of the run drops the card.
        pending.approvals = pending.approvals.filter(function (a) { return a.approval_id !== d.approval_id; });
        activeRunId = d.run_id;
        if (d.status === "approved" || d.status === "rejected") showNotice(d.status === "approved" ? T.approved : T.rejected);
        if (d.status === "approved") setBusy(true);
        break;
      case "conversation_created":
        S.conversation_id = d.conversation_id;
        if (window.history && history.replaceState) history.replaceState(null, "", S.urls.chat + d.conversation_id + "/");
        addConversationLink(d.conversation_id, d.title);
        break;
      case "run_started":
        inFlight = null;  // admitted: the files are the message's now
        activeRunId = d.run_id;
        liveTurn();
        setBusy(true);
        break;
      case "part_start":
        if (d.part_type === "text" || d.part_type === "thinking") pendingKind = d.part_type;
        break;
      case "text_delta": addText("text", d.content); break;
      case "thinking_delta": addText("thinking", d.content); break;
      case "tool_call":
        if (!findCall(d.tool_call_id)) {
          liveTurn().parts.push({type: "tool", call: {id: d.tool_call_id, name: d.tool_name, args: d.args || {},
                                                      result: null, status: "running", live_url: liveViews[d.tool_call_id],
                                                      needs_person: needsPerson[d.tool_call_id]}});
        }
        pendingKind = null;
        break;
      case "browser_live":
        // The running browse's live view: a "Watch the browser" link on its step (turn.js liveLinks).
        var browsing = findCall(d.call_id);
        if (browsing) browsing.live_url = d.url; else liveViews[d.call_id] = d.url;
        break;
      case "browser_needs_person":
        // Only a person can go on: the browse's step says so, and why, while it runs (turn.js needsPerson).
        var needing = findCall(d.call_id);
        if (needing) needing.needs_person = String(d.reason || ""); else needsPerson[d.call_id] = String(d.reason || "");
        break;
      case "tool_result":
        var call = findCall(d.tool_call_id);
        if (!call) {
          call = {id: d.tool_call_id, name: "", args: {}, result: null, status: "running"};
          liveTurn().parts.push({type: "tool", call: call});
        }
        call.result = d.content;
        call.status = d.ok === false ? "error" : "ok";
        if (openSteps[call.id] === undefined) openSteps[call.id] = true; // what just finished is what one looks at
        break;
      case "subagent_started":
        var opened = delegationFor(d);
        Object.assign(opened, {parent_task_id: d.parent_task_id || null, depth: d.depth, name: d.name, kind: d.kind,
                               mode: d.mode, task: d.task, tool_call_id: d.tool_call_id});
        if (d.definition) opened.definition = d.definition;
        break;
      case "subagent_delta":
        var inner = delegationFor(d).parts;
        var lastInner = inner[inner.length - 1];
        if (!d.new_part && lastInner && lastInner.type === d.part_type) lastInner.text += d.content;
        else inner.push({type: d.part_type, text: d.content});
        break;
      case "subagent_tool_call":
        delegationFor(d).parts.push({type: "tool", tool_call_id: d.tool_call_id, tool_name: d.tool_name,
                                     args: d.args || {}, status: "running", result: null});
        break;
      case "subagent_tool_result":
        delegationFor(d).parts.forEach(function (p) {
          if (p.type === "tool" && p.tool_call_id === d.tool_call_id) { p.status = d.ok === false ? "error" : "ok"; p.result = d.content; }
        });
        break;
      case "subagent_finished":
        var closed = delegationFor(d);
        closed.status = d.status;
        closed.usage = d.usage || null;
        break;
      case "tool_approval_required":
        activeRunId = d.run_id;
        var parked = findCall(d.tool_call_id);
        if (parked) parked.status = "parked";
        if (!pending.approvals.some(function (a) { return a.approval_id === d.approval_id; })) pending.approvals.push(d);
        break;
      case "ask_user":
        activeRunId = d.run_id;
        if (!pending.questions.some(function (q) { return q.question_id === d.question_id; })) pending.questions.push(d);
        break;
      case "follow_ups":
        if (d.conversation_id !== S.conversation_id) break;
        followUpsByRun[d.run_id] = d.steps || [];
        turns.forEach(function (t) { if (t.role === "assistant" && t.run_id === d.run_id) t.follow_ups = d.steps || []; });
        break;
      case "complete":
        var turn = liveTurn();
        turn.usage = Object.assign({status: d.status}, d.usage || {});
        lastUsage = turn.usage;
        var agent = currentAgent();
        if (agent && d.usage) agent.budget.spent = String(Number(agent.budget.spent) + Number(d.usage.cost_usd || 0));
        setBusy(false);
        reconcile();
        break;
      case "error":
        if (inFlight) {
          // The message was refused before it ran (an unusable file, a rule): its files go back in the composer,
          // the refused one marked with the reason, so nothing the person attached is lost in silence.
          var refusedFiles = inFlight;
          inFlight = null;
          var last = turns[turns.length - 1];
          if (last && last.role === "user") {
            turns.pop();
            if (!textarea.value) textarea.value = last.text || "";
          }
          var fileProblem = /^attachment_/.test(d.code || "");
          refusedFiles.forEach(function (f) { if (fileProblem) Object.assign(f, {status: "failed", error: d.message}); });
          attached = refusedFiles.concat(attached);
          renderChips();
          if (!fileProblem) showNotice(fill(T.error, {message: d.message}));
          setBusy(false);
          break;
        }
        // A stop the person asked for is not an error: the turn keeps what streamed and says it was stopped.
        var stopped = d.code === "cancelled";
        if (activeRunId && stopped) liveTurn().stopped = true;
        else if (activeRunId) liveTurn().error = d.message;
        else showNotice(fill(T.error, {message: d.message}));
        setBusy(false);
        if (activeRunId) reconcile(stopped ? null : d.message);
        break;
    }
    schedule();
  }

  // When a turn ends, the stored transcript is the truth (statuses of failed calls, grouping of a resumed run).
  function reconcile(errorText) {
    if (!S.conversation_id) return;
    var runId = activeRunId;
    fetch(S.urls.turns.replace("00000000-0000-0000-0000-000000000000", S.conversation_id), {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (data) {
        // A turn started since this was asked for: its own end reconciles; this answer would drop it.
        if (activeRunId !== runId) return;
        turns = data.turns;
        if (errorText) turns.forEach(function (t) { if (t.run_id === runId && t.role === "assistant") t.error = errorText; });
        pending = data.pending;
        lastUsage = data.usage || lastUsage;
        schedule();
      });
    loadFiles();
  }

  // ---------------------------------------------------------------- files panel
  // Present only when this conversation's agent keeps files; re-read when a turn ends, not on a timer. Files
  // are read through the conversation (…/workspace/file and …/raw), so a shared chat shows them too.

  function fmtBytes(n) {
    n = Number(n) || 0;
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return (n / 1024).toFixed(n < 10240 ? 1 : 0) + " KB";
    return (n / (1024 * 1024)).toFixed(1) + " MB";
  }
  function workspaceUrl(tail, path) {
    var url = S.urls.workspace.replace("00000000-0000-0000-0000-000000000000", S.conversation_id) + (tail || "");
    return path ? url + "?path=" + encodeURIComponent(path) : url;
  }
  function openFile(file) {
    var viewer = document.querySelector("[data-file-viewer]");
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
  function loadFiles() {
    var panel = document.querySelector("[data-files]");
    if (!panel || !S.conversation_id || !S.urls.workspace) return;
    fetch(workspaceUrl(""), {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.json() : {workspace: null}; })
      .then(function (data) {
        var ws = data.workspace;
        panel.hidden = !ws;
        document.querySelector(".chat-layout").classList.toggle("with-files", !!ws);
        if (!ws) return;
        workspaceFill = Math.floor(100 * ws.used_bytes / Math.max(ws.max_bytes, 1));
        renderUsage();
        var known = ws.files.map(function (f) { return f.path; });
        if (JSON.stringify(known) !== JSON.stringify(workspaceFiles)) { workspaceFiles = known; schedule(); }
        panel.querySelector("[data-files-owner]").textContent = ws.label;
        panel.querySelector("[data-files-fill]").textContent = fill(T.files_fill, {
          used: fmtBytes(ws.used_bytes), max: fmtBytes(ws.max_bytes),
          percent: Math.floor(100 * ws.used_bytes / Math.max(ws.max_bytes, 1))});
        var list = panel.querySelector("[data-files-list]");
        list.replaceChildren();
        if (!ws.files.length) list.appendChild(h("li", {class: "muted", text: T.files_empty}));
        ws.files.forEach(function (file) {
          var open = h("button", {type: "button", class: "link", text: T.files_open});
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

  // A decision made on a reopened conversation: this socket never joined that run, so follow it by reading.
  function watchRun(runId) {
    var started = Date.now();
    function tick() {
      if (Date.now() - lastFrameAt < 1500) { setTimeout(tick, 1000); return; }
      fetch(S.urls.turns.replace("00000000-0000-0000-0000-000000000000", S.conversation_id), {credentials: "same-origin"})
        .then(function (r) { return r.json(); })
        .then(function (data) {
          var done = data.turns.some(function (t) {
            return t.run_id === runId && t.usage && ["queued", "running"].indexOf(t.usage.status) < 0 &&
                   (t.usage.status !== "awaiting_approval" || data.pending.approvals.length);
          });
          if (Date.now() - lastFrameAt >= 1500) { turns = data.turns; pending = data.pending; lastUsage = data.usage || lastUsage; schedule(); }
          if (done) { setBusy(false); return; }
          if (Date.now() - started < 120000) setTimeout(tick, 1000);
        });
    }
    setTimeout(tick, 1000);
  }

  // While a turn runs, Send is disabled and Stop offered (issue 25): a message sent mid-turn was accepted but
  // answered only after a reload, so one turn at a time; Stop ends the running one.
  var sendButton = root.querySelector("[data-send]");
  function setBusy(value) {
    transcriptEl.setAttribute("aria-busy", value ? "true" : "false");
    if (stopButton) stopButton.hidden = !value;
    if (sendButton) sendButton.disabled = value || uploading();
    if (busy !== value) { busy = value; schedule(); }  // the message actions follow
  }

  // ---------------------------------------------------------------- attachments
  // Files for the next message: the attach button, a drop on the conversation or a paste put them in the composer as
  // chips (name, size, remove). Each is uploaded at once through POST /api/v1/attachments — the hosted page's
  // intake: the same ceiling, the type read from the bytes — and the message names the ids the upload answered.
  // A refusal stays on its chip with the server's reason; the other files and the question go on without it.

  var ATTACHMENTS_URL = "/api/v1/attachments";
  var attached = [];       // {key, name, size, mime, status: "uploading" | "ready" | "failed", id, error}
  var inFlight = null;     // the files of a message sent but not yet admitted: back in the composer if refused
  var chipsEl = null;
  var attachKeys = 0;

  function fileChip(file, onRemove) {
    var state = file.status || "ready";
    var chip = h("li", {class: "file-chip status-" + state, "data-file-chip": state, title: file.name}, [
      h("span", {class: "file-chip-name", text: file.name}),
      h("span", {class: "file-chip-size muted", text: file.size === undefined || file.size === null ? "" : fmtBytes(file.size)}),
    ]);
    if (state === "uploading") chip.appendChild(h("span", {class: "muted", role: "status", text: T.uploading}));
    if (state === "failed") chip.appendChild(h("span", {class: "field-error", role: "alert", "data-file-error": "",
                                                        text: fill(T.upload_failed, {message: file.error || ""})}));
    if (onRemove) {
      var remove = h("button", {type: "button", class: "file-chip-remove", "data-remove-file": "",
                                "aria-label": fill(T.remove_file, {name: file.name}), text: "×"});
      remove.addEventListener("click", onRemove);
      chip.appendChild(remove);
    }
    return chip;
  }
  function renderChips() {
    if (!chipsEl) return;
    chipsEl.replaceChildren.apply(chipsEl, attached.map(function (file) {
      return fileChip(file, function () {
        attached = attached.filter(function (f) { return f !== file; });
        renderChips();
        textarea.focus();
      });
    }));
    chipsEl.hidden = !attached.length;
    // A message may be only files ("Attached image: …" on the server): the text is required only without them.
    textarea.required = !readyFiles().length;
    if (sendButton) sendButton.disabled = busy || uploading();
  }
  function readyFiles() { return attached.filter(function (f) { return f.status === "ready"; }); }
  function uploading() { return attached.some(function (f) { return f.status === "uploading"; }); }

  function attachFiles(list) {
    Array.prototype.forEach.call(list || [], function (blob) {
      var file = {key: ++attachKeys, name: blob.name || "pasted", size: blob.size, status: "uploading"};
      attached.push(file);
      var body = new FormData();
      body.append("file", blob, file.name);
      fetch(ATTACHMENTS_URL, {method: "POST", body: body, credentials: "same-origin",
                              headers: {"X-CSRFToken": csrf(), "Accept": "application/json"}})
        .then(function (r) { return r.json().then(function (j) { return {ok: r.ok, j: j}; }, function () { return {ok: false, j: {}}; }); })
        .then(function (res) {
          if (res.ok) Object.assign(file, {status: "ready", id: res.j.id, name: res.j.name, size: res.j.size, mime: res.j.mime});
          else Object.assign(file, {status: "failed", error: (res.j.error || {}).message || ""});
        }, function () { Object.assign(file, {status: "failed", error: T.disconnected}); })
        .then(renderChips);
    });
    renderChips();
  }

  function setupAttachments() {
    chipsEl = h("ul", {class: "composer-files", "data-composer-files": "", "aria-label": T.attached_files, hidden: ""});
    var input = h("input", {type: "file", multiple: "", hidden: "", "data-attach-input": "", tabindex: "-1"});
    var button = h("button", {type: "button", class: "button attach", "data-attach": "", "aria-label": T.attach_files,
                              title: T.attach_files, html: '<svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" ' +
      'fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 11.5l-8.6 8.6a5.5 ' +
      '5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9"/></svg>'});
    button.addEventListener("click", function () { input.click(); });
    input.addEventListener("change", function () { attachFiles(input.files); input.value = ""; });
    composer.insertBefore(chipsEl, composer.firstChild);
    var controls = composer.querySelector(".composer-controls") || composer;
    controls.insertBefore(button, controls.firstChild);
    controls.appendChild(input);
    // A drop anywhere on the conversation attaches (a file dropped beside the composer would otherwise make the
    // browser leave the chat to show it).
    root.addEventListener("dragover", function (event) {
      if (!event.dataTransfer || Array.prototype.indexOf.call(event.dataTransfer.types || [], "Files") < 0) return;
      event.preventDefault();
      composer.classList.add("dragging");
    });
    root.addEventListener("dragleave", function (event) {
      if (!event.relatedTarget || !root.contains(event.relatedTarget)) composer.classList.remove("dragging");
    });
    root.addEventListener("drop", function (event) {
      composer.classList.remove("dragging");
      if (!event.dataTransfer || !event.dataTransfer.files.length) return;
      event.preventDefault();
      attachFiles(event.dataTransfer.files);
    });
    // A pasted screenshot is a file; pasted text stays text.
    textarea.addEventListener("paste", function (event) {
      var data = event.clipboardData;
      if (!data || !data.files || !data.files.length || data.getData("text/plain")) return;
      event.preventDefault();
      attachFiles(data.files);
    });
  }

  // ---------------------------------------------------------------- composer

  function sendText(text, files) {
    if (!S.agent_id) { showNotice(T.choose_agent); return false; }
    files = files || [];
    var message = {type: "message", agent_id: S.agent_id, text: text};
    if (S.conversation_id) message.conversation_id = S.conversation_id;
    if (files.length) message.attachment_ids = files.map(function (f) { return f.id; });
    inFlight = files.length ? files : null;
    turns.push({role: "user", text: text, attachments: files.map(function (f) { return {name: f.name, mime: f.mime, size: f.size}; })});
    schedule();
    socketSend(message);
    return true;
  }

  if (composer) {
    setupAttachments();
    composer.addEventListener("submit", function (event) {
      event.preventDefault();
      var text = textarea.value.trim();
      var files = readyFiles();
      if ((!text && !files.length) || uploading() || transcriptEl.getAttribute("aria-busy") === "true") return;
      if (sendText(text, files)) {
        textarea.value = "";
        attached = [];
        renderChips();
      }
    });
    textarea.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        composer.requestSubmit();
      } else if (event.key === "ArrowUp" && !textarea.value && !event.isComposing && !busy) {
        if (editLastMessage()) event.preventDefault();  // ↑ in an empty composer: edit the last message
      }
    });
    // Esc stops a running turn, wherever the focus is (a dialog of the page would take Esc first).
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && busy && stopButton && !stopButton.hidden && !event.defaultPrevented) {
        event.preventDefault();
        stopButton.click();
      }
    });
  }
  // agenticos.followUp(text) in a drawing (visuals.js) offers the text under it; the person's click sends it here.
  transcriptEl.addEventListener("agenticos:follow-up", function (event) {
    if (transcriptEl.getAttribute("aria-busy") !== "true" && event.detail && event.detail.text) sendText(event.detail.text);
  });
  if (stopButton) {
    stopButton.addEventListener("click", function () {
      socketSend({type: "stop", run_id: activeRunId});
    });
  }
  if (picker) {
    picker.addEventListener("change", function () { S.agent_id = picker.value; renderUsage(); });
  }

  // A reopened conversation opens exactly one past step: the last call of the latest turn that used a tool.
  for (var i = turns.length - 1; i >= 0; i--) {
    var calls = (turns[i].parts || []).filter(function (p) { return p.type === "tool"; });
    if (calls.length) { openSteps[calls[calls.length - 1].call.id] = true; break; }
  }
  if (S.agents.length || S.conversation_id) connect();
  // A reopened conversation whose run still waits for a person: follow that run live, so its frames and a
  // decision on its approval made anywhere (the Approvals page, another tab) reach this view.
  var waiting = {};
  pending.approvals.concat(pending.questions).forEach(function (item) { if (item.run_id) waiting[item.run_id] = true; });
  Object.keys(waiting).forEach(function (runId) { socketSend({type: "watch", run_id: runId}); });
  loadFiles();
  renderTranscript();
})();
