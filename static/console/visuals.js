/* Visuals in the conversation (capabilities/visuals): window.AgenticVisuals.render(call, el) draws a draw /
   revise_visual call into `el`, in the applications' sandbox — an <iframe sandbox="allow-scripts"> (never
   allow-same-origin: an opaque origin) whose document carries CSP connect-src 'none' and may load only the
   deployment's library bundle (/apps/lib/).

   call = {tool_name, args, result, streaming, tool_call_id?}. While `streaming` the markup is shown without
   scripts and on* attributes (Mermaid redraws per complete line); once the call is complete the drawing runs
   once, and — while its tool has not answered yet (`result` empty) — the frame's report (script errors,
   failed loads, refused requests) is posted to /api/v1/visuals/reports, which `draw` is waiting for.
   agenticos.followUp(text) from a drawing shows the text under it with a Send button; only a click sends it,
   as the bubbling DOM event "agenticos:follow-up" {detail: {text}} (and AgenticChat.send when present). */
(function () {
  "use strict";
  var LIB = "/apps/lib/";
  var REPORT_URL = "/api/v1/visuals/reports";
  var byId = {};       // visual id → {kind, content, images, title}
  var mounted = [];    // {iframe, el, digest, report}

  function libSource() { return location.origin + LIB; }
  // The map tile server the deployment allows (VISUAL_MAP_TILES), the only image origin besides the library.
  function tileOrigin() {
    var meta = document.querySelector('meta[name="agenticos-map-tiles"]');
    return meta ? meta.content : "";
  }
  function policy(scripts) {
    var lib = libSource();
    var tiles = tileOrigin();
    return ["default-src 'none'", "script-src " + (scripts ? "'unsafe-inline' " : "") + lib,
            "style-src 'unsafe-inline' " + lib, "img-src data: blob: " + lib + (tiles ? " " + tiles : ""), "font-src data:",
            "connect-src 'none'", "form-action 'none'", "base-uri 'none'"].join("; ");
  }
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function withImages(content, images) {
    return String(content || "").replace(/\{\{image:([^}]*)\}\}/g, function (_, name) {
      return (images && images[name]) || "";
    });
  }
  // Until the call is complete: no scripts, no on* handlers, no javascript: URLs.
  function inert(markup) {
    var parsed = new DOMParser().parseFromString("<body>" + markup + "</body>", "text/html");
    parsed.querySelectorAll("script, iframe, object, embed").forEach(function (n) { n.remove(); });
    parsed.querySelectorAll("*").forEach(function (n) {
      Array.prototype.slice.call(n.attributes).forEach(function (a) {
        if (/^on/i.test(a.name) || /^\s*javascript:/i.test(a.value)) n.removeAttribute(a.name);
      });
    });
    return parsed.body.innerHTML;
  }
  function documentFor(kind, content, images, live) {
    var head = '<!doctype html><html><head><meta charset="utf-8">' +
      '<meta http-equiv="Content-Security-Policy" content="' + esc(policy(!live)) + '">' +
      '<meta name="viewport" content="width=device-width, initial-scale=1">' +
      '<style>html,body{margin:0;background:transparent;font:15px/1.5 system-ui,sans-serif}svg{max-width:100%;height:auto}</style>' +
      (live ? "" : '<script src="' + LIB + 'agenticos-frame.js"></script>');
    var body = withImages(content, images);
    if (kind === "mermaid") {
      var text = live ? body.slice(0, body.lastIndexOf("\n") + 1) : body;
      return head + '<script src="' + LIB + 'mermaid.min.js"></script></head><body><pre class="mermaid">' +
        esc(text) + '</pre><script>mermaid.initialize({startOnLoad:false,securityLevel:"strict"});' +
        'mermaid.run({querySelector:".mermaid"});</script></body></html>';
    }
    if (live) return head + "</head><body>" + inert(body) + "</body></html>";
    return head + "</head><body>" + body + "</body></html>";
  }

  // sha256(kind + "\n" + content), as capabilities/visuals/reports.py computes it.
  function sha256(text) {
    var bytes = new TextEncoder().encode(text);
    if (window.crypto && crypto.subtle) {
      return crypto.subtle.digest("SHA-256", bytes).then(function (buf) { return hex(new Uint8Array(buf)); });
    }
    return Promise.resolve(hex(sha256Plain(bytes)));
  }
  function hex(arr) { return Array.prototype.map.call(arr, function (b) { return ("0" + b.toString(16)).slice(-2); }).join(""); }
  function sha256Plain(msg) { // for plain-http deployments, where crypto.subtle is absent
    var K = [], H = [], i, j, p = 2, n = 0;
    function frac(x) { return ((x - Math.floor(x)) * 4294967296) | 0; }
    while (n < 64) { for (j = 2; j * j <= p; j++) if (p % j === 0) break; if (j * j > p) { if (n < 8) H[n] = frac(Math.pow(p, 1 / 2)); K[n++] = frac(Math.pow(p, 1 / 3)); } p++; }
    var len = msg.length, words = [], bitLen = len * 8;
    for (i = 0; i < len; i++) words[i >> 2] |= msg[i] << (24 - (i % 4) * 8);
    words[len >> 2] |= 0x80 << (24 - (len % 4) * 8);
    words[(((len + 8) >> 6) << 4) + 15] = bitLen;
    function r(x, c) { return (x >>> c) | (x << (32 - c)); }
    for (i = 0; i < words.length; i += 16) {
      var w = words.slice(i, i + 16), a = H.slice(0);
      for (j = 0; j < 64; j++) {
        if (j >= 16) {
          var w15 = w[j - 15], w2 = w[j - 2];
          w[j] = (w[j - 16] + (r(w15, 7) ^ r(w15, 18) ^ (w15 >>> 3)) + w[j - 7] + (r(w2, 17) ^ r(w2, 19) ^ (w2 >>> 10))) | 0;
        }
        var t1 = (a[7] + (r(a[4], 6) ^ r(a[4], 11) ^ r(a[4], 25)) + ((a[4] & a[5]) ^ (~a[4] & a[6])) + K[j] + (w[j] | 0)) | 0;
        var t2 = ((r(a[0], 2) ^ r(a[0], 13) ^ r(a[0], 22)) + ((a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]))) | 0;
        a = [(t1 + t2) | 0].concat(a); a[4] = (a[4] + t1) | 0; a.length = 8;
      }
      for (j = 0; j < 8; j++) H[j] = (H[j] + a[j]) | 0;
    }
    var out = new Uint8Array(32);
    for (i = 0; i < 32; i++) out[i] = (H[i >> 2] >>> (24 - (i % 4) * 8)) & 255;
    return out;
  }

  function csrf() { var m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/); return m ? decodeURIComponent(m[1]) : ""; }

  function applyEdits(text, edits) {
    for (var i = 0; i < (edits || []).length; i++) {
      var e = edits[i] || {}, at = text.indexOf(e.old_text);
      if (!e.old_text || at < 0 || text.indexOf(e.old_text, at + 1) >= 0) return null;
      text = text.slice(0, at) + (e.new_text || "") + text.slice(at + e.old_text.length);
    }
    return text;
  }
  function parsedArgs(args) {
    if (args && typeof args === "object") return args;
    if (typeof args !== "string") return {};
    try { return JSON.parse(args); } catch (e) { /* still streaming */ }
    var out = {}, m = args.match(/"kind"\s*:\s*"(svg|mermaid|html)"/);
    if (m) out.kind = m[1];
    var c = args.match(/"content"\s*:\s*"((?:[^"\\]|\\.)*)/);
    if (c) { try { out.content = JSON.parse('"' + c[1].replace(/\\$/, "") + '"'); } catch (e) { out.content = ""; } }
    return out;
  }

  function describe(call) {
    var args = parsedArgs(call.args), result = call.result && typeof call.result === "object" ? call.result : null;
    if (call.tool_name === "revise_visual") {
      var base = byId[args.visual_id];
      var content = result && result.content || (base ? applyEdits(base.content, args.edits) : null);
      return {kind: (result && result.visual_kind) || (base && base.kind) || "html", content: content,
              images: (result && result.images) || (base && base.images) || {}, title: (result && result.title) || (base && base.title) || ""};
    }
    return {kind: args.kind || (result && result.visual_kind) || "html", content: args.content,
            images: (result && result.images) || {}, title: args.title || ""};
  }

  function render(call, el) {
    call = call || {};
    var v = describe(call);
    var result = call.result && typeof call.result === "object" ? call.result : null;
    var id = (result && result.visual_id) || (call.tool_name === "draw" ? call.tool_call_id : null);
    if (id && typeof v.content === "string") byId[id] = v;
    var box = el.querySelector("[data-visual]");
    if (!box) {
      box = document.createElement("figure");
      box.className = "visual";
      box.setAttribute("data-visual", "");
      var frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts");
      frame.setAttribute("referrerpolicy", "no-referrer");
      frame.setAttribute("title", v.title || "Visual");
      frame.style.cssText = "width:100%;min-height:120px;border:0;display:block";
      box.appendChild(frame);
      var cap = document.createElement("figcaption");
      cap.className = "muted";
      box.appendChild(cap);
      el.appendChild(box);
    }
    box.querySelector("figcaption").textContent = v.title || "";
    if (typeof v.content !== "string" || !v.content) return box;
    var iframe = box.querySelector("iframe");
    var live = !!call.streaming;
    var key = (live ? "live:" : "final:") + v.kind + "\n" + v.content;
    if (iframe.__key === key) return box;
    iframe.__key = key;
    var entry = mounted.find(function (m) { return m.iframe === iframe; });
    if (!entry) { entry = {iframe: iframe, el: box}; mounted.push(entry); }
    entry.report = !live && !result; // the tool is still waiting for this drawing's report
    entry.digest = null;
    if (!live) sha256(v.kind + "\n" + v.content).then(function (d) { entry.digest = d; flush(entry); });
    iframe.srcdoc = documentFor(v.kind, v.content, v.images, live);
    return box;
  }

  function flush(entry) {
    if (!entry.pending || !entry.digest) return;
    var errors = entry.pending;
    entry.pending = null;
    showErrors(entry, errors);
    if (!entry.report) return;
    entry.report = false;
    fetch(REPORT_URL, {method: "POST", credentials: "same-origin",
                       headers: {"Content-Type": "application/json", "X-CSRFToken": csrf(), "Accept": "application/json"},
                       body: JSON.stringify({digest: entry.digest, errors: errors})}).catch(function () {});
  }
  function showErrors(entry, errors) {
    var list = entry.el.querySelector("[data-visual-errors]");
    if (list) list.remove();
    if (!errors.length) return;
    list = document.createElement("ul");
    list.setAttribute("data-visual-errors", "");
    list.className = "notice error";
    errors.forEach(function (e) { var li = document.createElement("li"); li.textContent = e; list.appendChild(li); });
    entry.el.appendChild(list);
  }
  function offerFollowUp(entry, text) {
    if (!text) return;
    var old = entry.el.querySelector("[data-visual-follow-up]");
    if (old) old.remove();
    var row = document.createElement("div");
    row.setAttribute("data-visual-follow-up", "");
    var words = document.createElement("span");
    words.textContent = text;
    var send = document.createElement("button");
    send.type = "button";
    send.className = "button small";
    send.textContent = "Send";
    send.addEventListener("click", function () {
      row.remove();
      entry.el.dispatchEvent(new CustomEvent("agenticos:follow-up", {bubbles: true, detail: {text: text}}));
      if (window.AgenticChat && typeof window.AgenticChat.send === "function") window.AgenticChat.send(text);
    });
    row.appendChild(words);
    row.appendChild(send);
    entry.el.appendChild(row);
  }

  window.addEventListener("message", function (ev) {
    var entry = mounted.find(function (m) { return m.iframe.contentWindow === ev.source; });
    var data = ev.data;
    if (!entry || !data || typeof data !== "object") return;
    if ((data.agenticos === "height" || data.agenticos === "report") && data.height > 0) {
      entry.iframe.style.height = Math.min(Math.max(data.height, 120), 2000) + "px";
    }
    if (data.agenticos === "report") {
      entry.pending = Array.isArray(data.errors) ? data.errors.map(String).slice(0, 20) : [];
      flush(entry);
    } else if (data.agenticos === "follow_up") {
      offerFollowUp(entry, String(data.text || "").slice(0, 500));
    }
  });

  window.AgenticVisuals = {render: render, documentFor: documentFor, digest: function (kind, content) { return sha256(kind + "\n" + content); }};
})();
