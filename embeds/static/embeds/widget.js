/* AgenticOS website widget. No dependencies, no build step, no globals besides reading
   window.AgenticOSContext and window.AgenticOSToken. Everything lives in a shadow root, so a page's
   React, jQuery or CSS cannot touch it. Reads model_request_start, text_delta, final_result, complete
   and error; ignores reasoning and steps on purpose. AOS_CONFIG is prepended by the server. */
var cfg = AOS_CONFIG;
var script = document.currentScript;
var base = script && script.src ? new URL(script.src).origin : location.origin;
var wsBase = base.replace(/^http/, "ws");
var host = document.createElement("div");
host.setAttribute("data-agenticos-widget", cfg.key);
var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
var side = cfg.corner === "bottom-left" ? "left" : "right";
var css = ":host{all:initial}*{box-sizing:border-box;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif}" +
  ".l{position:fixed;bottom:20px;" + side + ":20px;z-index:2147483000;background:" + cfg.accent + ";color:#fff;border:0;border-radius:24px;padding:12px 18px;font-size:15px;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.2)}" +
  ".p{position:fixed;bottom:76px;" + side + ":20px;z-index:2147483000;width:360px;max-width:calc(100vw - 40px);height:520px;max-height:calc(100vh - 100px);background:#fff;color:#111;border-radius:14px;box-shadow:0 10px 40px rgba(0,0,0,.25);display:none;flex-direction:column;overflow:hidden}" +
  ".p.o{display:flex}.h{background:" + cfg.accent + ";color:#fff;padding:12px 14px}.h b{display:block;font-size:15px}.h small{opacity:.85;font-size:12px}" +
  ".m{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;font-size:14px;line-height:1.45}" +
  ".b{max-width:85%;padding:8px 11px;border-radius:12px;word-wrap:break-word}.u{align-self:flex-end;background:" + cfg.accent + ";color:#fff;white-space:pre-wrap}" +
  ".a{align-self:flex-start;background:#f1f2f4}.a p{margin:0 0 6px}.a p:last-child{margin:0}.a pre{background:#e4e6ea;padding:6px;border-radius:6px;overflow-x:auto}.e{align-self:center;color:#b42318;font-size:13px}" +
  ".t{opacity:.6}.f{display:flex;border-top:1px solid #e5e7eb}.f textarea{flex:1;border:0;padding:10px;font-size:14px;resize:none;outline:none;height:44px}" +
  ".f button{border:0;background:none;color:" + cfg.accent + ";font-weight:600;padding:0 14px;cursor:pointer}";
root.innerHTML = "<style>" + css + "</style>" +
  '<button class="l" part="launcher"></button>' +
  '<div class="p" role="dialog"><div class="h"><b></b><small></small></div><div class="m" aria-live="polite"></div>' +
  '<form class="f"><textarea rows="1"></textarea><button type="submit">Send</button></form></div>';
var launcher = root.querySelector(".l"), panel = root.querySelector(".p"), log = root.querySelector(".m");
var form = root.querySelector("form"), input = root.querySelector("textarea");
launcher.textContent = cfg.launcherText;
root.querySelector(".h b").textContent = cfg.title;
root.querySelector(".h small").textContent = cfg.subtitle || "";
input.placeholder = cfg.emptyText;

var socket = null, ready = false, refused = false, queue = [], bubble = null, answer = "";
function add(cls, text) {
  var el = document.createElement("div");
  el.className = "b " + cls;
  if (text != null) el.textContent = text;
  log.appendChild(el); log.scrollTop = log.scrollHeight;
  return el;
}
// The greeting is drawn here and never sent to the model: a greeting in its history would be a
// turn the agent believes it gave.
if (cfg.greeting) add("a").innerHTML = aosMarkdown(cfg.greeting);

function render() { if (bubble) { bubble.innerHTML = aosMarkdown(answer); log.scrollTop = log.scrollHeight; } }
function connect() {
  if (socket || refused) return;
  var url = wsBase + "/api/v1/embed/" + encodeURIComponent(cfg.key) + "/ws";
  if (window.AgenticOSToken) url += "?token=" + encodeURIComponent(window.AgenticOSToken);
  socket = new WebSocket(url);
  socket.onmessage = function (ev) {
    var f; try { f = JSON.parse(ev.data); } catch (e) { return; }
    var d = f.data || {};
    if (f.type === "ready") { ready = true; while (queue.length) socket.send(queue.shift()); }
    else if (f.type === "model_request_start") { if (!bubble) { bubble = add("a t", "…"); answer = ""; } }
    else if (f.type === "text_delta") { if (!bubble) bubble = add("a"); bubble.classList.remove("t"); answer += d.content || ""; render(); }
    else if (f.type === "final_result") { if (d.output) { if (!bubble) bubble = add("a"); answer = String(d.output); bubble.classList.remove("t"); render(); } }
    else if (f.type === "complete") { if (bubble && !answer) bubble.remove(); bubble = null; answer = ""; }
    else if (f.type === "error") { if (bubble && !answer) bubble.remove(); bubble = null; answer = ""; add("e", d.message || "Something went wrong."); }
  };
  socket.onclose = function (ev) {
    socket = null; ready = false;
    if (bubble && !answer) bubble.remove(); bubble = null;
    if (ev.code === 4003) { refused = true; add("e", "This assistant is not available here."); form.querySelector("button").disabled = true; }
    else if (ev.code === 4029) add("e", "Too many connections. Please wait a moment.");
  };
}
function send(text) {
  var ctx = window.AgenticOSContext && typeof window.AgenticOSContext === "object" ? window.AgenticOSContext : undefined;
  var frame = JSON.stringify({ type: "message", text: text, context: ctx });
  if (ready && socket) socket.send(frame); else { queue.push(frame); connect(); }
}
launcher.onclick = function () { panel.classList.toggle("o"); if (panel.classList.contains("o")) { connect(); input.focus(); } };
form.onsubmit = function (ev) {
  ev.preventDefault();
  var text = input.value.trim();
  if (!text || refused) return;
  add("u", text); input.value = ""; send(text);
};
input.onkeydown = function (ev) { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit ? form.requestSubmit() : form.onsubmit(ev); } };
function mount() { document.body.appendChild(host); }
if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount);
