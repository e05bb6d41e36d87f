import {post, errorMessage} from "./dom.js";
import {approvalCard, capabilityCard} from "./cards.js";

// The Builder's test chat: talks to the DRAFT through the web chat socket (/ws/chat/, environment "draft").
// The server freezes the draft for the run and marks it a draft run; this file only draws the turn: the
// streamed text, the tools used, an approval to decide, a missing capability to enable or ask for.
function setUpTestChat() {
  const panel = document.querySelector("[data-test-chat]");
  if (!panel) return;
  const log = panel.querySelector("[data-test-chat-log]");
  const form = panel.querySelector("[data-test-chat-form]");
  const text = panel.querySelector("[data-test-chat-text]");
  const send = panel.querySelector("[data-test-chat-send]");
  const reset = panel.querySelector("[data-test-chat-reset]");
  const strings = JSON.parse(document.getElementById("test-chat-strings").textContent);
  const agentId = panel.getAttribute("data-agent");
  let socket = null;
  const outbox = [];
  let conversationId = null;
  let current = null; // {body, text, streamed}

  function el(tag, cls, content) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function busy(on) {
    log.setAttribute("aria-busy", on ? "true" : "false");
    send.disabled = on;
  }

  function turn(role, label) {
    const box = el("div", "test-turn test-turn-" + role);
    box.setAttribute("data-test-turn", role);
    box.appendChild(el("div", "test-turn-who muted", label));
    const body = el("div", "test-turn-body");
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

  // The shared cards (cards.js), as web chat draws them: a call to approve, a capability the draft is missing.
  function approval(data) {
    const url = panel.getAttribute("data-decide-url").replace("00000000-0000-0000-0000-000000000000", data.approval_id);
    current.body.appendChild(approvalCard({
      approvalId: data.approval_id, toolName: data.tool_name, title: strings.needs_approval + " " + data.tool_name,
      canDecide: true, strings: {approve: strings.approve, reject: strings.deny}, attrs: {"data-test-approval": data.approval_id},
      onDecide(decision, card) {
        post(url, new URLSearchParams({decision})).then(function (r) {
          card.appendChild(el("p", "muted", r.ok ? (strings[r.json.status] || r.json.status) : errorMessage(r.json)));
        });
      },
    }));
  }

  function questionCard(data) {
    const card = el("div", "test-card");
    card.setAttribute("data-test-question", data.question_id);
    const controls = [];
    (Array.isArray(data.questions) ? data.questions : []).forEach(function (q, i) {
      const id = "test-q-" + data.question_id + "-" + i;
      const label = el("label", "", q.question || q.header || "");
      label.setAttribute("for", id);
      card.appendChild(label);
      let control;
      if (Array.isArray(q.options) && q.options.length) {
        control = el("select");
        q.options.forEach(function (o) { const opt = el("option", "", o.label); opt.value = o.label; control.appendChild(opt); });
      } else {
        control = el("input");
        control.type = "text";
      }
      control.id = id;
      card.appendChild(control);
      controls.push(control);
    });
    const button = el("button", "button small primary", strings.answer);
    button.type = "button";
    button.addEventListener("click", function () {
      button.disabled = true;
      socketSend(JSON.stringify({type: "ask_user_response", run_id: data.run_id,
                                 answers: controls.map(function (c) { return c.value; })}));
    });
    card.appendChild(button);
    current.body.appendChild(card);
  }

  function capability(data) {
    const cap = data.capability || {};
    const action = data.can_enable ? "enable" : "ask";
    current.body.appendChild(capabilityCard({
      capability: cap, reason: data.reason, canEnable: !!data.can_enable,
      url: panel.getAttribute(action === "enable" ? "data-enable-url" : "data-request-url").replace("CAPABILITY", encodeURIComponent(cap.id)),
      strings: {missing: strings.missing, enable: strings.enable, ask: strings.ask, enabled: strings.enabled, asked: strings.asked},
    }));
  }

  const handlers = {
    conversation_created: function (d) { conversationId = d.conversation_id; },
    text_delta: function (d) { current.streamed = true; answerText().textContent += d.content || ""; },
    tool_call: function (d) {
      // A call resumed after its approval is announced again: one line per call.
      if (d.tool_call_id && current.body.querySelector('[data-test-step="' + d.tool_call_id + '"]')) return;
      const line = el("p", "muted test-step", strings.using + " " + d.tool_name);
      if (d.tool_call_id) line.setAttribute("data-test-step", d.tool_call_id);
      current.body.appendChild(line);
    },
    tool_approval_required: approval,
    ask_user: questionCard,
    capability_missing: capability,
    final_result: function (d) { if (!current.streamed && d.output) answerText().textContent = d.output; },
    complete: function (d) {
      if (d.status === "awaiting_approval" || d.status === "awaiting_answer") return;
      const usage = d.usage || {};
      const line = el("p", "muted test-usage", (usage.input_tokens || 0) + " / " + (usage.output_tokens || 0) + " " + strings.tokens);
      line.setAttribute("data-test-usage", "");
      current.body.appendChild(line);
      busy(false);
    },
    error: function (d) {
      const note = el("p", "field-error", d.message || "");
      note.setAttribute("role", "alert");
      (current ? current.body : log).appendChild(note);
      busy(false);
    }
  };

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + panel.getAttribute("data-socket"));
    socket.addEventListener("open", function () {
      while (outbox.length) socket.send(outbox.shift());
    });
    socket.addEventListener("message", function (event) {
      const payload = JSON.parse(event.data);
      const handle = handlers[payload.type];
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
    const words = text.value.trim();
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
}

setUpTestChat();
