// The call view of /chat: a live voice call with the agent on screen (calls/consumers.py is the socket).
// The microphone is read at 24 kHz, sent as base64 PCM16 in small chunks; the agent's audio is played as it
// comes, and cut when the person starts speaking. Captions, ask_user and approval cards and the hand-off task panel are
// drawn from the socket's frames. No build step: a native ES module.
import { h } from "./dom.js";

const RATE = 24000;

function toBase64(int16) {
  const bytes = new Uint8Array(int16.buffer);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new Int16Array(bytes.buffer, 0, Math.floor(bytes.length / 2));
}

class Call {
  constructor(root, state) {
    this.root = root;
    this.state = state;
    this.el = (name) => root.querySelector(`[data-call-${name}]`);
    this.muted = false;
    this.playing = [];
    this.nextTime = 0;
    this.el("start").addEventListener("click", () => this.start());
    this.el("mute").addEventListener("click", () => this.toggleMute());
    this.el("hangup").addEventListener("click", () => this.hangUp());
  }

  agentId() {
    const picker = document.querySelector("[data-agent-picker]");
    return (picker && picker.value) || this.state.agent_id;
  }

  status(text) {
    this.el("status").textContent = text;
  }

  async start() {
    this.el("start").disabled = true;
    this.status(this.root.dataset.connecting);
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } });
    } catch (err) {
      this.status(this.root.dataset.noMicrophone);
      this.el("start").disabled = false;
      return;
    }
    this.audio = new AudioContext({ sampleRate: RATE });
    const query = new URLSearchParams({ agent: this.agentId() });
    if (this.state.conversation_id) query.set("conversation", this.state.conversation_id);
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    this.socket = new WebSocket(`${scheme}://${location.host}/ws/call/?${query}`);
    this.socket.addEventListener("message", (event) => this.onFrame(JSON.parse(event.data)));
    this.socket.addEventListener("close", () => this.teardown());
  }

  listen() {
    const source = this.audio.createMediaStreamSource(this.stream);
    // ScriptProcessor rather than an AudioWorklet: a worklet is a second module file fetched at start, and the
    // chunks here are 85 ms, where the main thread's timing is enough.
    this.processor = this.audio.createScriptProcessor(2048, 1, 1);
    this.processor.onaudioprocess = (event) => {
      if (this.muted || !this.socket || this.socket.readyState !== WebSocket.OPEN) return;
      const input = event.inputBuffer.getChannelData(0);
      const pcm = new Int16Array(input.length);
      for (let i = 0; i < input.length; i++) pcm[i] = Math.max(-1, Math.min(1, input[i])) * 0x7fff;
      this.socket.send(JSON.stringify({ type: "audio", audio: toBase64(pcm) }));
    };
    source.connect(this.processor);
    this.processor.connect(this.audio.destination);
  }

  play(base64) {
    const pcm = fromBase64(base64);
    if (!pcm.length) return;
    const buffer = this.audio.createBuffer(1, pcm.length, RATE);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 0x8000;
    const node = this.audio.createBufferSource();
    node.buffer = buffer;
    node.connect(this.audio.destination);
    this.nextTime = Math.max(this.nextTime, this.audio.currentTime);
    node.start(this.nextTime);
    this.nextTime += buffer.duration;
    this.playing.push(node);
    node.onended = () => { this.playing = this.playing.filter((n) => n !== node); };
  }

  interrupt() {
    for (const node of this.playing) node.stop();
    this.playing = [];
    this.nextTime = 0;
  }

  onFrame(payload) {
    const data = payload.data || {};
    switch (payload.type) {
      case "call_started":
        this.state.conversation_id = data.conversation_id;
        this.root.dataset.active = "true";
        this.el("start").hidden = true;
        this.el("mute").hidden = false;
        this.el("hangup").hidden = false;
        this.status(`${this.root.dataset.onCall} ${data.agent}`);
        this.listen();
        break;
      case "audio":
        this.play(data.audio);
        break;
      case "speech_started":
        this.interrupt();
        break;
      case "caption":
        this.el("live").textContent += data.delta;
        break;
      case "turn":
        this.el("live").textContent = "";
        this.el("captions").append(h("p", { class: `call-turn ${data.role}`, "data-role": data.role, text: data.text }));
        break;
      case "ask_user":
        this.ask(data);
        break;
      case "approval":
        this.approval(data);
        break;
      case "tool_done": {
        const card = this.el("questions").querySelector(`[data-call-approval="${CSS.escape(data.call_id)}"]`);
        if (card) card.remove();
        break;
      }
      case "task_started":
        this.el("tasks").append(h("li", { "data-task": data.run_id, class: "call-task working", text: data.task }));
        this.el("tasks-panel").hidden = false;
        break;
      case "task_done": {
        const item = this.el("tasks").querySelector(`[data-task="${CSS.escape(data.run_id)}"]`);
        if (item) {
          item.className = `call-task ${data.status}`;
          item.append(h("span", { class: "muted", text: ` — ${data.status}` }));
        }
        break;
      }
      case "usage":
        this.el("cost").textContent = `$${data.cost_usd}`;
        break;
      case "error":
        this.status(data.message);
        break;
      case "call_ended":
        this.status(this.root.dataset.ended);
        break;
      default:
        break;
    }
  }

  ask(data) {
    const card = h("form", { class: "card call-question", "data-call-question": data.call_id },
      [h("p", { text: data.question })]);
    const answer = (text) => {
      this.socket.send(JSON.stringify({ type: "answer", call_id: data.call_id, answer: text }));
      card.remove();
    };
    for (const option of data.options || []) {
      const button = h("button", { type: "button", class: "button small", text: option });
      button.addEventListener("click", () => answer(option));
      card.append(button);
    }
    const input = h("input", { type: "text", "aria-label": this.root.dataset.yourAnswer, maxlength: "2000" });
    card.append(input, h("button", { type: "submit", class: "button small primary", text: this.root.dataset.send }));
    card.addEventListener("submit", (event) => { event.preventDefault(); if (input.value.trim()) answer(input.value); });
    this.el("questions").append(card);
  }

  // A tool that needs approval: the call waits on this card (the model has told the person why). Someone who may
  // not decide sees what waits and that it runs only if an approver allows it (Approvals page) during the call.
  approval(data) {
    const card = h("div", { class: "card call-approval", "data-call-approval": data.call_id, role: "group",
      "aria-label": this.root.dataset.approvalNeeded }, [
      h("p", { text: `${this.root.dataset.approvalNeeded}: ${data.name}` }),
      h("pre", { class: "call-approval-args", text: data.args }),
    ]);
    if (!data.can_decide) {
      card.append(h("p", { class: "muted", text: this.root.dataset.cannotDecide }));
      this.el("questions").append(card);
      return;
    }
    const decide = (decision) => {
      this.socket.send(JSON.stringify({ type: "decide", call_id: data.call_id, decision }));
      card.remove();
    };
    for (const [decision, label, kind] of [["approve", this.root.dataset.approve, "primary"],
                                           ["reject", this.root.dataset.reject, "danger"]]) {
      const button = h("button", { type: "button", class: `button small ${kind}`, text: label,
        "data-call-decision": decision });
      button.addEventListener("click", () => decide(decision));
      card.append(button);
    }
    this.el("questions").append(card);
  }

  toggleMute() {
    this.muted = !this.muted;
    if (this.muted && this.socket) this.socket.send(JSON.stringify({ type: "mute" }));
    this.el("mute").setAttribute("aria-pressed", String(this.muted));
    this.el("mute").textContent = this.muted ? this.root.dataset.unmute : this.root.dataset.mute;
  }

  hangUp() {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ type: "hang_up" }));
    this.teardown();
  }

  teardown() {
    if (this.processor) this.processor.disconnect();
    if (this.stream) for (const track of this.stream.getTracks()) track.stop();
    this.interrupt();
    this.processor = null;
    this.stream = null;
    this.root.dataset.active = "false";
    this.el("start").hidden = false;
    this.el("start").disabled = false;
    this.el("mute").hidden = true;
    this.el("hangup").hidden = true;
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.close();
  }
}

const root = document.querySelector("[data-call]");
const stateNode = document.getElementById("chat-state");
if (root && stateNode) new Call(root, JSON.parse(stateNode.textContent));
