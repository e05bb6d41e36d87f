/* The hosted page client. Reads its config from #aos-config (rendered by the server). Keeps one
   random continuity key per public key in localStorage; the server replays that thread as `history`.
   Draws what the server sends and nothing more: the toggles are applied on the server. */
(function () {
  var cfg = JSON.parse(document.getElementById("aos-config").textContent);
  var storeKey = "agenticos-visitor:" + cfg.key;
  var $ = function (id) { return document.getElementById(id); };
  var log = $("log"), form = $("composer"), input = $("input"), sendBtn = $("send"), statusEl = $("status");
  var socket = null, ready = false, refused = false, turn = null, pendingFiles = [];

  function newKey() {
    var bytes = new Uint8Array(16);
    (window.crypto || window.msCrypto).getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }
  function visitorKey() {
    var k = null;
    try { k = localStorage.getItem(storeKey); } catch (e) { k = null; }
    if (!k || !/^[0-9a-f]{32,64}$/.test(k)) { k = newKey(); try { localStorage.setItem(storeKey, k); } catch (e) {} }
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
    var a = document.createElement("div");
    a.className = "avatar";
    if (cfg.logoUrl) {
      var img = document.createElement("img");
      img.alt = ""; img.src = cfg.logoUrl;
      // Nothing instead of a broken image when there is no file behind it.
      img.onerror = function () { img.remove(); a.textContent = (cfg.agentName || "?").charAt(0).toUpperCase(); };
      a.appendChild(img);
    } else a.textContent = (cfg.agentName || "?").charAt(0).toUpperCase();
    return a;
  }
  function addTurn(role, text, at) {
    var row = document.createElement("div");
    row.className = "turn " + role;
    var body = document.createElement("div");
    body.className = "body";
    if (role === "assistant") {
      row.appendChild(avatar());
      var name = document.createElement("div"); name.className = "name"; name.textContent = cfg.agentName; body.appendChild(name);
    }
    var content = document.createElement("div");
    content.className = "content";
    if (role === "assistant") content.innerHTML = aosMarkdown(text || "");
    else content.textContent = text || ""; // what a visitor wrote is not a document
    body.appendChild(content);
    var time = document.createElement("div"); time.className = "time"; time.textContent = fmtTime(at); body.appendChild(time);
    row.appendChild(body);
    log.appendChild(row); log.scrollTop = log.scrollHeight;
    return { row: row, body: body, content: content, text: text || "", parts: {} };
  }
  function showError(message) {
    var el = document.createElement("div"); el.className = "notice"; el.textContent = message;
    log.appendChild(el); log.scrollTop = log.scrollHeight;
  }
  function clearLog() { log.innerHTML = ""; if (cfg.welcome) { var w = document.createElement("div"); w.className = "welcome"; w.innerHTML = aosMarkdown(cfg.welcome); log.appendChild(w); } }
  function busy(on) { sendBtn.disabled = on || refused; statusEl.textContent = on ? "…" : ""; }

  function humanize(name) { return String(name || "step").replace(/^mcp__[^_]+__/, "").replace(/[_-]+/g, " ").replace(/^./, function (c) { return c.toUpperCase(); }); }

  function onFrame(f) {
    var d = f.data || {};
    switch (f.type) {
      case "ready": ready = true; busy(false); break;
      case "history": clearLog(); (d.messages || []).forEach(function (m) { addTurn(m.role, m.text, m.at); }); break;
      case "model_request_start": if (!turn) turn = addTurn("assistant", ""); break;
      case "part_start":
        if (!turn) turn = addTurn("assistant", "");
        if (d.part_type === "thinking") {
          var det = document.createElement("details"); det.className = "thinking";
          det.innerHTML = "<summary>Reasoning</summary><div></div>";
          turn.body.insertBefore(det, turn.content); turn.parts[d.index] = det.querySelector("div");
        }
        break;
      case "thinking_delta": if (turn && turn.parts[d.index]) turn.parts[d.index].textContent += d.content || ""; break;
      case "text_delta": if (!turn) turn = addTurn("assistant", ""); turn.text += d.content || ""; turn.content.innerHTML = aosMarkdown(turn.text); log.scrollTop = log.scrollHeight; break;
      case "tool_call":
        if (!turn) turn = addTurn("assistant", "");
        var step = document.createElement("details"); step.className = "step"; step.id = "step-" + d.tool_call_id;
        var sum = document.createElement("summary"); sum.textContent = humanize(d.tool_name); step.appendChild(sum);
        if (d.args !== undefined) { var pre = document.createElement("pre"); pre.textContent = JSON.stringify(d.args, null, 2); step.appendChild(pre); }
        turn.body.insertBefore(step, turn.content); break;
      case "tool_result":
        var s = document.getElementById("step-" + d.tool_call_id);
        if (s) { var r = document.createElement("pre"); r.textContent = typeof d.content === "string" ? d.content : JSON.stringify(d.content, null, 2); s.appendChild(r); }
        break;
      case "final_result": if (d.output) { if (!turn) turn = addTurn("assistant", ""); turn.text = String(d.output); turn.content.innerHTML = aosMarkdown(turn.text); } break;
      case "complete": if (turn && !turn.text && !turn.body.querySelector(".step")) turn.row.remove(); turn = null; busy(false); break;
      case "error": if (turn && !turn.text) turn.row.remove(); turn = null; showError(d.message || "Something went wrong."); busy(false); break;
    }
  }
  function connect() {
    if (refused) return;
    ready = false; busy(true);
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(proto + location.host + "/api/v1/embed/" + encodeURIComponent(cfg.key) + "/ws?visitor=" + visitorKey());
    socket.onmessage = function (ev) { try { onFrame(JSON.parse(ev.data)); } catch (e) {} };
    socket.onclose = function (ev) {
      ready = false; socket = null; turn = null;
      if (ev.code === 4003) { refused = true; showError("This page is not available."); busy(false); }
      else if (ev.code === 4029) { showError("Too many connections. Retrying shortly…"); setTimeout(connect, 15000); }
      else if (ev.code === 1011 || ev.code === 1006) { setTimeout(connect, 2000); }
    };
  }
  form.onsubmit = function (ev) {
    ev.preventDefault();
    var text = input.value.trim();
    if (!text || !ready || refused) return;
    addTurn("user", text);
    var frame = { type: "message", text: text, context: urlVariables() };
    if (pendingFiles.length) { frame.file_ids = pendingFiles.map(function (f) { return f.id; }); pendingFiles = []; $("files").textContent = ""; }
    socket.send(JSON.stringify(frame));
    input.value = ""; busy(true);
  };
  input.onkeydown = function (ev) { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); } };
  var newBtn = $("new-thread");
  if (newBtn) newBtn.onclick = function () {
    // The old thread is not deleted: it stops being the one this browser resumes.
    try { localStorage.setItem(storeKey, newKey()); } catch (e) {}
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
