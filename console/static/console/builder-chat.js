// The Builder's test chat: talks to the DRAFT through the web chat socket (/ws/chat/, environment "draft").
// The server freezes the draft for the run and marks it a draft run; this file only draws the turn: the
// streamed text, the tools used, an approval to decide, a missing capability to enable or ask for.
(function () {
  "use strict";
  var panel = document.querySelector("[data-test-chat]");
  if (!panel) return;
  var log = panel.querySelector("[data-test-chat-log]");
  var form = panel.querySelector("[data-test-chat-form]");
  var text = panel.querySelector("[data-test-chat-text]");
  var send = panel.querySelector("[data-test-chat-send]");
  var reset = panel.querySelector("[data-test-chat-reset]");
  var strings = JSON.parse(document.getElementById("test-chat-strings").textContent);
  var agentId = panel.getAttribute("data-agent");
  var socket = null;
  var outbox = [];
  var conversationId = null;
  var current = null; // {body, text, streamed}

  function csrf() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; }
    catch (e) { return ""; }
  }

  function el(tag, cls, content) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function busy(on) {
    log.setAttribute("aria-busy", on ? "true" : "false");
    send.disabled = on;
  }

  function turn(role, label) {
    var box = el("div", "test-turn test-turn-" + role);
    box.setAttribute("data-test-turn", role);
    box.appendChild(el("div", "test-turn-who muted", label));
    var body = el("div", "test-turn-body");
    box.appendChild(body);
    log.appendChild(box);
    log.scrollTop = log.scrollHeight;
    return body;
  }

  function answerText() {
    if (!current.text) {
      current.text = el("p", "test-turn-text");
      current.text.setAttribute("data-test-answer", "");
      current.body.appendChild(current.text);
    }
    return current.text;
  }

  function post(url, data, asJson) {
    var headers = {"X-CSRFToken": csrf(), "Accept": "application/json"};
    if (asJson) headers["Content-Type"] = "application/json";
    var body = asJson ? JSON.stringify(data || {}) : new URLSearchParams(data || {});
    return fetch(url, {method: "POST", credentials: "same-origin", body: body, headers: headers})
      .then(function (r) { return r.json().then(function (j) { return {ok: r.ok, json: j}; }); });
  }

  function approvalCard(data) {
    var card = el("div", "test-card");
    card.setAttribute("data-test-approval", data.approval_id);
    card.appendChild(el("p", "", strings.needs_approval + " " + data.tool_name));
    [["approve", strings.approve], ["reject", strings.deny]].forEach(function (pair) {
      var decision = pair[0];
      var button = el("button", "button small" + (decision === "approve" ? " primary" : ""), pair[1]);
      button.type = "button";
      button.addEventListener("click", function () {
        card.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
        var url = panel.getAttribute("data-decide-url").replace("00000000-0000-0000-0000-000000000000",
                                                                   data.approval_id);
        post(url, {decision: decision}).then(function (r) {
          card.appendChild(el("p", "muted", r.ok ? (strings[r.json.status] || r.json.status)
                                                 : (r.json.error || {}).message || ""));
        });
      });
      card.appendChild(button);
    });
    current.body.appendChild(card);
  }

  function questionCard(data) {
    var card = el("div", "test-card");
    card.setAttribute("data-test-question", data.question_id);
    var controls = [];
    (Array.isArray(data.questions) ? data.questions : []).forEach(function (q, i) {
      var id = "test-q-" + data.question_id + "-" + i;
      var label = el("label", "", q.question || q.header || "");
      label.setAttribute("for", id);
      card.appendChild(label);
      var control;
      if (Array.isArray(q.options) && q.options.length) {
        control = el("select");
        q.options.forEach(function (o) { var opt = el("option", "", o.label); opt.value = o.label; control.appendChild(opt); });
      } else {
        control = el("input");
        control.type = "text";
      }
      control.id = id;
      card.appendChild(control);
      controls.push(control);
    });
    var button = el("button", "button small primary", strings.answer);
    button.type = "button";
    button.addEventListener("click", function () {
      button.disabled = true;
      socketSend(JSON.stringify({type: "ask_user_response", run_id: data.run_id,
                                 answers: controls.map(function (c) { return c.value; })}));
    });
    card.appendChild(button);
    current.body.appendChild(card);
  }

  function capabilityCard(data) {
    var cap = data.capability || {};
    var card = el("div", "test-card capability-card");
    card.setAttribute("data-capability-card", cap.id);
    card.appendChild(el("p", "", strings.missing));
    card.appendChild(el("strong", "", cap.name));
    if (cap.offers) card.appendChild(el("p", "muted", cap.offers));
    if (data.reason) card.appendChild(el("p", "", data.reason));
    var action = data.can_enable ? "enable" : "ask";
    var button = el("button", "button small primary", strings[action]);
    button.type = "button";
    button.setAttribute("data-capability-action", action);
    button.addEventListener("click", function () {
      button.disabled = true;
      var url = panel.getAttribute(action === "enable" ? "data-enable-url" : "data-request-url")
        .replace("CAPABILITY", encodeURIComponent(cap.id));
      post(url, {reason: data.reason || ""}, true).then(function (r) {
        var note = el("p", r.ok ? "muted" : "field-error", r.ok ? (r.json.message || strings[action === "enable" ? "enabled" : "asked"])
                                                            : ((r.json.error || {}).message || ""));
        note.setAttribute("data-capability-result", r.ok ? "ok" : "error");
        card.appendChild(note);
        if (!r.ok) button.disabled = false;
      });
    });
    card.appendChild(button);
    current.body.appendChild(card);
  }

  var handlers = {
    conversation_created: function (d) { conversationId = d.conversation_id; },
    text_delta: function (d) { current.streamed = true; answerText().textContent += d.content || ""; },
    tool_call: function (d) {
      // A call resumed after its approval is announced again: one line per call.
      if (d.tool_call_id && current.body.querySelector('[data-test-step="' + d.tool_call_id + '"]')) return;
      var line = el("p", "muted test-step", strings.using + " " + d.tool_name);
      if (d.tool_call_id) line.setAttribute("data-test-step", d.tool_call_id);
      current.body.appendChild(line);
    },
    tool_approval_required: approvalCard,
    ask_user: questionCard,
    capability_missing: capabilityCard,
    final_result: function (d) { if (!current.streamed && d.output) answerText().textContent = d.output; },
    complete: function (d) {
      if (d.status === "awaiting_approval" || d.status === "awaiting_answer") return;
      var usage = d.usage || {};
      var line = el("p", "muted test-usage", (usage.input_tokens || 0) + " / " + (usage.output_tokens || 0) + " " + strings.tokens);
      line.setAttribute("data-test-usage", "");
      current.body.appendChild(line);
      busy(false);
    },
    error: function (d) {
      var note = el("p", "field-error", d.message || "");
      note.setAttribute("role", "alert");
      (current ? current.body : log).appendChild(note);
      busy(false);
    }
  };

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + panel.getAttribute("data-socket"));
    socket.addEventListener("open", function () {
      while (outbox.length) socket.send(outbox.shift());
    });
    socket.addEventListener("message", function (event) {
      var payload = JSON.parse(event.data);
      var handle = handlers[payload.type];
      if (handle && (current || payload.type === "error")) handle(payload.data || {});
      log.scrollTop = log.scrollHeight;
    });
    socket.addEventListener("close", function () {
      socket = null;
      if (send.disabled) handlers.error({message: strings.closed});
    });
  }

  function socketSend(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(message);
    else { outbox.push(message); if (!socket) connect(); }
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var words = text.value.trim();
    if (!words || send.disabled) return;
    turn("user", strings.you).appendChild(el("p", "test-turn-text", words));
    current = {body: turn("assistant", strings.draft), text: null, streamed: false};
    busy(true);
    text.value = "";
    socketSend(JSON.stringify({type: "message", agent_id: agentId, text: words, environment: "draft",
                               conversation_id: conversationId}));
  });

  text.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });

  reset.addEventListener("click", function () {
    conversationId = null;
    current = null;
    log.textContent = "";
    busy(false);
    text.focus();
  });
})();
