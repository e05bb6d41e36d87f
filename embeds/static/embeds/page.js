/* The hosted page client. Reads its config from #aos-config (rendered by the server). Keeps one
   random continuity key per public key in localStorage; the server replays that thread as `history`.
   Turns are drawn by the one turn renderer (console/static/console/turn.js), as in web chat and the widget; what the
   visitor may see (steps, results, reasoning) is decided on the server. */
(function () {
  var cfg = JSON.parse(document.getElementById("aos-config").textContent);
  var storeKey = "agenticos-visitor:" + cfg.key;
  var mediaToken = "";  // the socket's `ready` gives it: what generated-file links carry
  var $ = function (id) { return document.getElementById(id); };
  var log = $("log"), turnsEl = $("turns"), notices = $("notices"), form = $("composer"), input = $("input");
  var sendBtn = $("send"), statusEl = $("status");
  // The header's logo goes when it cannot be read (a handler in the markup would be inline script, which the
  // page's Content-Security-Policy refuses); it may have failed before this script ran.
  var headerLogo = document.querySelector("img[data-logo]");
  if (headerLogo) {
    if (headerLogo.complete && !headerLogo.naturalWidth) headerLogo.remove();
    else headerLogo.addEventListener("error", function () { headerLogo.remove(); });
  }
  var socket = null, ready = false, refused = false, pendingFiles = [];
  var turns = [], live = AgenticTurn.stream(), queued = false;
  var h = AgenticTurn.h;

  function newKey() {
    var bytes = new Uint8Array(16);
    (window.crypto || window.msCrypto).getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }
  function visitorKey() {
    var k = null;
    try { k = localStorage.getItem(storeKey); } catch (e) { k = null; }
    if (!k || !/^[0-9a-f]{32,64}$/.test(k)) { k = newKey(); try { localStorage.setItem(storeKey, k); } catch (e) { /* storage refused (private mode): a key per page load */ } }
    return k;
  }
  function urlVariables() {
    var params = new URLSearchParams(location.search), ctx = {}, any = false;
    cfg.urlVariables.forEach(function (name) { var v = params.get("var_" + name); if (v !== null) { ctx[name] = v; any = true; } });
    return any ? ctx : undefined;
  }
  function fmtTime(iso) {
    var d = iso ? new Date(iso) : new Date();
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }
  function avatar() {
    var a = h("div", {class: "avatar"});
    if (cfg.logoUrl) {
      var img = h("img", {alt: "", src: cfg.logoUrl});
      // Nothing instead of a broken image when there is no file behind it.
      img.onerror = function () { img.remove(); a.textContent = (cfg.agentName || "?").charAt(0).toUpperCase(); };
      a.appendChild(img);
    } else a.textContent = (cfg.agentName || "?").charAt(0).toUpperCase();
    return a;
  }

  // A visitor reports nothing back about a drawing: no session, and its errors are written for the model.
  if (window.AgenticVisuals) AgenticVisuals.configure({origin: location.origin, reports: false});
  var renderer = AgenticTurn.create({
    assistantClass: "assistant",
    // A generated file is served to this visitor through the page's own route, opened by the socket's `media`
    // token: the continuity key never goes in a URL (URLs reach access logs).
    mediaUrl: function (filename, download) {
      return "/api/v1/embed/" + encodeURIComponent(cfg.key) + "/generated/" + filename + "?media=" + encodeURIComponent(mediaToken) +
        (download ? "&download=1" : "");
    },
    head: function () { return h("header", {class: "turn-head"}, [avatar(), h("div", {class: "name", text: cfg.agentName})]); },
    foot: function (turn) {
      return [turn.error ? h("div", {class: "notice", role: "alert", text: turn.error}) : null,
              turn.live ? null : h("div", {class: "time", text: fmtTime(turn.at)})];
    },
    user: function (turn) {  // what a visitor wrote is not a document; the files they sent are named above it
      var files = turn.attachments || [];
      return h("article", {class: "turn turn-user user", "data-turn": "user"}, [h("div", {class: "body"}, [
        files.length ? h("ul", {class: "message-files", "data-message-files": "", "aria-label": "Attached files"},
                         files.map(function (f) { return h("li", {text: f.name}); })) : null,
        h("div", {class: "content", text: turn.text}), h("div", {class: "time", text: fmtTime(turn.at)})])]);
    },
    // 👍/👎 under each finished answer (the socket's `feedback` frame, on this visitor's own thread only).
    actions: function (turn) { return [AgenticTurn.visitorFeedback(turn, {send: sendFeedback})]; },
    onChange: function () { draw(); },  // a fold the reader clicked: at once
  });
  function draw() {
    queued = false;
    var atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
    renderer.render(turnsEl, turns);
    if (atBottom) log.scrollTop = log.scrollHeight;
  }
  function schedule() { if (!queued) { queued = true; requestAnimationFrame(draw); } }

  function showError(message) {
    notices.appendChild(h("div", {class: "notice", text: message}));
    log.scrollTop = log.scrollHeight;
  }
  function clearLog() {
    turns = []; live.reset(); turnsEl.replaceChildren(); notices.replaceChildren();
    var w = $("welcome");
    if (cfg.welcome) { w.replaceChildren(renderer.markdown(cfg.welcome)); w.hidden = false; } else w.hidden = true;
  }
  function busy(on) { sendBtn.disabled = on || refused; statusEl.textContent = on ? "…" : ""; }

  function onFrame(f) {
    var d = f.data || {};
    if (f.type === "ready") { ready = true; mediaToken = d.media || ""; busy(false); return; }
    if (f.type === "feedback_saved") { if (AgenticTurn.feedbackSaved(turns, d)) schedule(); return; }
    if (f.type === "history") {
      clearLog();
      turns = (d.messages || []).map(AgenticTurn.fromHistory);
      schedule();
      return;
    }
    if (f.type === "error" && !turns.some(function (t) { return t.live; })) {
      showError(d.message || "Something went wrong.");
      busy(false);
      return;
    }
    if (live.apply(turns, f)) schedule();
    if (f.type === "complete" || f.type === "error") {
      turns.forEach(function (t) { if (!t.at) t.at = new Date().toISOString(); });
      busy(false);
    }
  }
  function connect() {
    if (refused) return;
    ready = false; busy(true);
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    // The continuity key travels in the handshake's subprotocols, never in the URL (URLs reach access logs).
    socket = new WebSocket(proto + location.host + "/api/v1/embed/" + encodeURIComponent(cfg.key) + "/ws",
                           ["agenticos.v1", "agenticos.visitor." + visitorKey()]);
    socket.onmessage = function (ev) { var f; try { f = JSON.parse(ev.data); } catch (e) { return; } onFrame(f); };
    socket.onclose = function (ev) {
      ready = false; socket = null; live.reset();
      if (ev.code === 4003) { refused = true; showError("This page is not available."); busy(false); }
      else if (ev.code === 4029) { showError("Too many connections. Retrying shortly…"); setTimeout(connect, 15000); }
      else if (ev.code === 1011 || ev.code === 1006) { setTimeout(connect, 2000); }
    };
  }
  function sendFeedback(frame) {
    if (socket && ready) socket.send(JSON.stringify(frame));
  }
  function sendText(text) {
    var files = pendingFiles.map(function (f) { return {name: f.name, mime: f.mime, size: f.size}; });
    turns.push({role: "user", text: text, at: new Date().toISOString(), attachments: files});
    schedule();
    var frame = { type: "message", text: text, context: urlVariables() };
    if (pendingFiles.length) { frame.file_ids = pendingFiles.map(function (f) { return f.id; }); pendingFiles = []; $("files").textContent = ""; }
    socket.send(JSON.stringify(frame));
    busy(true);
  }
  form.onsubmit = function (ev) {
    ev.preventDefault();
    var text = input.value.trim();
    if (!text || !ready || refused) return;
    sendText(text);
    input.value = "";
  };
  // agenticos.followUp(text) in a drawing: offered under it, and sent as the visitor's message only on their click.
  turnsEl.addEventListener("agenticos:follow-up", function (ev) {
    var text = ev.detail && ev.detail.text;
    if (text && ready && !refused && !sendBtn.disabled) sendText(text);
  });
  input.onkeydown = function (ev) { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); } };
  var newBtn = $("new-thread");
  if (newBtn) newBtn.onclick = function () {
    // The old thread is not deleted: it stops being the one this browser resumes.
    try { localStorage.setItem(storeKey, newKey()); } catch (e) { /* storage refused: nothing to replace */ }
    if (socket) { socket.onclose = null; socket.close(); socket = null; }
    clearLog(); connect();
  };
  var mic = $("mic"), Rec = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (mic && Rec) {
    mic.hidden = false;
    mic.onclick = function () { var r = new Rec(); r.onresult = function (e) { input.value += (input.value ? " " : "") + e.results[0][0].transcript; }; r.start(); };
  }
  var fileInput = $("file");
  if (fileInput) fileInput.onchange = function () {
    Array.prototype.slice.call(fileInput.files, 0, 3 - pendingFiles.length).forEach(function (file) {
      var body = new FormData(); body.append("file", file);
      fetch("/api/v1/embed/" + encodeURIComponent(cfg.key) + "/files", { method: "POST", body: body, headers: { "X-Visitor": visitorKey() } })
        .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, j: j }; }); })
        .then(function (res) {
          if (!res.ok) { showError((res.j.error && res.j.error.message) || "The file was not accepted."); return; }
          pendingFiles.push(res.j); $("files").textContent = pendingFiles.map(function (f) { return f.name; }).join(", ");
        });
    });
    fileInput.value = "";
  };
  clearLog();
  if (cfg.paused) { refused = true; showError("This page is not available."); busy(false); } else connect();
})();
