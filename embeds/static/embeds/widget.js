/* AgenticOS website widget. No build step, no globals left behind besides reading window.AgenticOSContext and
   window.AgenticOSToken. Everything lives in a shadow root, so a page's React, jQuery or CSS cannot touch it.
   Turns are drawn by the one turn renderer (console/static/console/turn.js, with marked, DOMPurify, highlight.js and
   the charts and the visuals' sandboxed frames), loaded from this server; each script's global is put back as the page had it once read, so a
   site with its own `marked` keeps it. What a visitor may see is decided on the server (embeds/frames.py).
   The conversation survives a reload of the host page: a continuity key per widget in the page's localStorage
   names the thread, as on the hosted page. AOS_CONFIG is prepended by the server. */
var cfg = AOS_CONFIG;
var script = document.currentScript;
var base = script && script.src ? new URL(script.src).origin : location.origin;
var wsBase = base.replace(/^http/, "ws");
var STATIC = base + "/static/";
var LIBS = [["vendor/marked.umd.js", "marked"], ["vendor/purify.min.js", "DOMPurify"], ["vendor/highlight.min.js", "hljs"],
            ["vendor/katex/katex.min.js", "katex"],
            ["console/charts.js", "AgenticCharts"], ["console/visuals.js", "AgenticVisuals"], ["console/turn.js", "AgenticTurn"]];
var storeKey = "agenticos-visitor:" + cfg.key;
var mediaToken = "";  // the socket's `ready` gives it: what generated-file links carry
var host = document.createElement("div");
host.setAttribute("data-agenticos-widget", cfg.key);
var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
var side = cfg.corner === "bottom-left" ? "left" : "right";
var css = ":host{all:initial}*{box-sizing:border-box;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif}" +
  ".l{position:fixed;bottom:20px;" + side + ":20px;z-index:2147483000;background:" + cfg.accent + ";color:#fff;border:0;border-radius:24px;padding:12px 18px;font-size:15px;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.2)}" +
  ".p{position:fixed;bottom:76px;" + side + ":20px;z-index:2147483000;width:360px;max-width:calc(100vw - 40px);height:520px;max-height:calc(100vh - 100px);background:#fff;color:#111;border-radius:14px;box-shadow:0 10px 40px rgba(0,0,0,.25);display:none;flex-direction:column;overflow:hidden}" +
  ".p.o{display:flex}.p{--accent:" + cfg.accent + "}.h{background:" + cfg.accent + ";color:#fff;padding:12px 14px}.h b{display:block;font-size:15px}.h small{opacity:.85;font-size:12px}" +
  ".m{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;font-size:14px;line-height:1.45}" +
  ".ts{display:flex;flex-direction:column;gap:8px}" +
  ".b{max-width:85%;padding:8px 11px;border-radius:12px;word-wrap:break-word;overflow-wrap:anywhere}.u{align-self:flex-end;background:" + cfg.accent + ";color:#fff;white-space:pre-wrap}" +
  ".a{align-self:flex-start;background:#f1f2f4}.a p{margin:0 0 6px}.a p:last-child{margin:0}.a pre{background:#e4e6ea;padding:6px;border-radius:6px;overflow-x:auto}.e{align-self:center;color:#b42318;font-size:13px}" +
  ".t{opacity:.6}.f{display:flex;border-top:1px solid #e5e7eb}.f textarea{flex:1;border:0;padding:10px;font-size:14px;resize:none;outline:none;height:44px}" +
  ".f button{border:0;background:none;color:" + cfg.accent + ";font-weight:600;padding:0 14px;cursor:pointer}" +
  ".visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}" +
  ".rail{border-left:2px solid #d0d4da;margin:4px 0;padding-left:8px;font-size:13px;color:#555}.rail-fold{background:none;border:0;color:#555;cursor:pointer;padding:0;text-decoration:underline;font-size:13px}" +
  ".step summary{cursor:pointer}.step-dot{display:none}.chart{max-width:100%;background:#fff;border-radius:6px;margin:4px 0}";
root.innerHTML = "<style>" + css + "</style>" +
  '<link rel="stylesheet" href="' + STATIC + 'vendor/highlight-github.min.css">' +
  '<link rel="stylesheet" href="' + STATIC + 'vendor/katex/katex.min.css">' +
  '<link rel="stylesheet" href="' + STATIC + 'console/turn.css">' +
  '<button class="l" part="launcher"></button>' +
  '<div class="p" role="dialog"><div class="h"><b></b><small></small></div>' +
  '<div class="m" aria-live="polite"><div class="ts"></div></div>' +
  '<form class="f"><textarea rows="1"></textarea><button type="submit">Send</button></form></div>';
var launcher = root.querySelector(".l"), panel = root.querySelector(".p"), log = root.querySelector(".m");
var turnsEl = root.querySelector(".ts");
var form = root.querySelector("form"), input = root.querySelector("textarea");
launcher.textContent = cfg.launcherText;
root.querySelector(".h b").textContent = cfg.title;
root.querySelector(".h small").textContent = cfg.subtitle || "";
input.placeholder = cfg.emptyText;

var socket = null, ready = false, refused = false, queue = [], libs = null, waiting = [];
var turns = [], live = null, renderer = null, queued = false;

function newKey() {
  var bytes = new Uint8Array(16);
  window.crypto.getRandomValues(bytes);
  return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
}
function visitorKey() {
  var k = null;
  try { k = localStorage.getItem(storeKey); } catch (e) { k = null; }
  if (!k || !/^[0-9a-f]{32,64}$/.test(k)) { k = newKey(); try { localStorage.setItem(storeKey, k); } catch (e) { /* storage refused (private mode): a key per page load */ } }
  return k;
}

// The renderer's scripts, one after the other, each global read and then put back as the page had it.
function loadLibs(done) {
  if (libs) { done(); return; }
  waiting.push(done);
  if (waiting.length > 1) return;
  var got = {}, i = 0;
  (function next() {
    if (i >= LIBS.length) {
      libs = got;
      waiting.splice(0).forEach(function (f) { f(); });
      return;
    }
    var item = LIBS[i++], name = item[1];
    var had = Object.prototype.hasOwnProperty.call(window, name), before = window[name];
    var s = document.createElement("script");
    s.src = STATIC + item[0];
    s.onload = s.onerror = function () {
      got[name] = window[name];
      if (had) window[name] = before;
      else { try { delete window[name]; } catch (e) { window[name] = undefined; } }
      s.remove();
      next();
    };
    (document.head || document.documentElement).appendChild(s);
  })();
}

function note(cls, text) {
  var el = document.createElement("div");
  el.className = "b " + cls;
  el.textContent = text;
  log.appendChild(el); log.scrollTop = log.scrollHeight;
  return el;
}
function draw() {
  queued = false;
  if (!renderer) return;
  renderer.render(turnsEl, turns);
  log.scrollTop = log.scrollHeight;
}
function schedule() { if (!queued) { queued = true; requestAnimationFrame(draw); } }

function setUp() {
  var T = libs.AgenticTurn;
  if (!T) { note("e", "This assistant could not load."); return false; }
  live = T.stream();
  // Drawings load the deployment's library bundle by this server's origin (the frame sits on the shop's page);
  // a visitor reports nothing back (no session, and a drawing's errors are written for the model).
  if (libs.AgenticVisuals) libs.AgenticVisuals.configure({origin: base, reports: false, tiles: cfg.mapTiles || ""});
  renderer = T.create({
    libs: {marked: libs.marked, DOMPurify: libs.DOMPurify, hljs: libs.hljs, katex: libs.katex, charts: libs.AgenticCharts,
           visuals: libs.AgenticVisuals},
    assistantClass: "b a",
    // A generated file is served to this visitor through the widget's own route, opened by the socket's `media`
    // token: the continuity key never goes in a URL (URLs reach access logs).
    mediaUrl: function (filename, download) {
      return base + "/api/v1/embed/" + encodeURIComponent(cfg.key) + "/generated/" + filename + "?media=" + encodeURIComponent(mediaToken) +
        (download ? "&download=1" : "");
    },
    foot: function (turn) {
      var out = [];
      if (turn.live && !turn.parts.length) out.push(T.h("span", {class: "t", text: "…"}));
      if (turn.error) out.push(T.h("div", {class: "e", role: "alert", text: turn.error}));
      return out;
    },
    user: function (turn) { return T.h("div", {class: "turn turn-user b u", "data-turn": "user", text: turn.text}); },
    // 👍/👎 under each finished answer (the socket's `feedback` frame, on this visitor's own thread only).
    actions: function (turn) { return [T.visitorFeedback(turn, {send: sendFrame})]; },
    onChange: draw,  // a fold the reader clicked: at once
  });
  // The greeting is drawn here and never sent to the model: a greeting in its history would be a
  // turn the agent believes it gave.
  if (cfg.greeting) {
    var greeting = renderer.markdown(cfg.greeting);
    greeting.className = "b a greeting";
    log.insertBefore(greeting, turnsEl);
  }
  return true;
}

// agenticos.followUp(text) in a drawing: offered under it, and sent as the visitor's message only on their click.
turnsEl.addEventListener("agenticos:follow-up", function (ev) {
  var text = ev.detail && ev.detail.text;
  if (!text || refused || turns.some(function (t) { return t.live; })) return;
  turns.push({role: "user", text: text}); schedule();
  send(text);
});

function onFrame(f) {
  var d = f.data || {};
  if (f.type === "ready") { ready = true; mediaToken = d.media || ""; while (queue.length) socket.send(queue.shift()); return; }
  if (f.type === "feedback_saved") { if (libs.AgenticTurn.feedbackSaved(turns, d)) schedule(); return; }
  if (f.type === "history") { turns = (d.messages || []).map(libs.AgenticTurn.fromHistory); live.reset(); schedule(); return; }
  if (f.type === "error" && !turns.some(function (t) { return t.live; })) { note("e", d.message || "Something went wrong."); return; }
  if (live.apply(turns, f)) schedule();
}
function connect() {
  if (socket || refused) return;
  // The continuity key and a signed visitor's token travel in the handshake's subprotocols, never in the URL
  // (URLs reach access logs).
  var protocols = ["agenticos.v1", "agenticos.visitor." + visitorKey()];
  if (window.AgenticOSToken) protocols.push("agenticos.token." + window.AgenticOSToken);
  socket = new WebSocket(wsBase + "/api/v1/embed/" + encodeURIComponent(cfg.key) + "/ws", protocols);
  socket.onmessage = function (ev) { var f; try { f = JSON.parse(ev.data); } catch (e) { return; } onFrame(f); };
  socket.onclose = function (ev) {
    socket = null; ready = false;
    if (live) { live.reset(); turns = turns.filter(function (t) { return !(t.live && !t.parts.length); }); schedule(); }
    if (ev.code === 4003) { refused = true; note("e", "This assistant is not available here."); form.querySelector("button").disabled = true; }
    else if (ev.code === 4029) note("e", "Too many connections. Please wait a moment.");
  };
}
function sendFrame(payload) {
  var frame = JSON.stringify(payload);
  if (ready && socket) socket.send(frame); else { queue.push(frame); connect(); }
}
function send(text) {
  var ctx = window.AgenticOSContext && typeof window.AgenticOSContext === "object" ? window.AgenticOSContext : undefined;
  sendFrame({ type: "message", text: text, context: ctx });
}
function open() {
  panel.classList.add("o");
  input.focus();
  loadLibs(function () { if (renderer || setUp()) { schedule(); connect(); } });
}
launcher.onclick = function () { if (panel.classList.contains("o")) panel.classList.remove("o"); else open(); };
form.onsubmit = function (ev) {
  ev.preventDefault();
  var text = input.value.trim();
  if (!text || refused) return;
  input.value = "";
  // Typed before the renderer finished loading: sent as soon as it has.
  loadLibs(function () {
    if (!renderer && !setUp()) return;
    turns.push({role: "user", text: text}); schedule();
    send(text);
  });
};
input.onkeydown = function (ev) { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit ? form.requestSubmit() : form.onsubmit(ev); } };
function mount() {
  document.body.appendChild(host);
  // KaTeX's @font-face rules are ignored inside a shadow root (Chromium and Firefox read font faces only from the
  // document), so the page gets the stylesheet once for its fonts; its rules touch only .katex elements.
  var fonts = STATIC + "vendor/katex/katex.min.css";
  if (!document.querySelector('link[href="' + fonts + '"]')) {
    var link = document.createElement("link");
    link.rel = "stylesheet"; link.href = fonts;
    (document.head || document.documentElement).appendChild(link);
  }
}
if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount);
