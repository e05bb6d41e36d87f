/* Visuals in the conversation (capabilities/visuals): window.AgenticVisuals.render(call, el) draws a draw /
   revise_visual call into `el`, in the applications' sandbox — an <iframe sandbox="allow-scripts"> (never
   allow-same-origin: an opaque origin) whose document carries CSP connect-src 'none' and may load only the
   deployment's library bundle (/apps/lib/, named by absolute origin: a widget's frame sits on a customer's page).

   call = {tool_name, args, result, streaming, tool_call_id?}. `args` may be the partial JSON of arguments still
   streaming (read with partialJSON). While `streaming` the frame stays where it is and grows: the markup so far is
   posted into it without scripts and on* attributes (Mermaid redraws per complete line), and the frame's policy
   admits no script but its own fixed one (by hash); once the call is complete the drawing runs once, and — while
   its tool has not answered yet (`result` empty) — the frame's report (script errors, failed loads, refused
   requests) is posted to /api/v1/visuals/reports, which `draw` is waiting for.
   agenticos.followUp(text) from a drawing shows the text under it with a Send button; only a click sends it,
   as the bubbling DOM event "agenticos:follow-up" {detail: {text}} (and AgenticChat.send when present).
   configure({origin, reports, tiles}): the deployment's origin (default this page's), whether to report and
   show a drawing's errors (off for visitors: they have no session, and the errors are written for the model),
   the map tile origin (default the page's agenticos-map-tiles meta). */
(function () {
  "use strict";
  var LIB = "/apps/lib/";
  var REPORT_URL = "/api/v1/visuals/reports";
  var byId = {};       // visual id → {kind, content, images, title}
  var mounted = [];    // {iframe, el, digest, report, live}
  var options = {origin: null, reports: true, tiles: null};
  // A drawing's frame loads FRAME_PATH from the deployment and is handed its document by message (load()), rather
  // than a srcdoc: a srcdoc document inherits the page's Content-Security-Policy on top of its own, and the
  // console's admits no inline script, so the drawing's scripts and handlers could not run.
  var FRAME_PATH = "/apps/frame";
  var loads = 0;

  function origin() { return options.origin || location.origin; }
  function libSource() { return origin() + LIB; }
  // The map tile server the deployment allows (VISUAL_MAP_TILES), the only image origin besides the library.
  function tileOrigin() {
    if (options.tiles !== null) return options.tiles || "";
    var meta = document.querySelector('meta[name="agenticos-map-tiles"]');
    return meta ? meta.content : "";
  }

  // The one script a growing drawing's frame runs: it takes the markup so far from its parent (already inert),
  // redraws Mermaid from complete lines, and says how tall it is. Admitted by its hash, so nothing the model
  // wrote can run before the call is complete. It takes itself out of the document once it has run.
  var LIVE_SCRIPT = '(function(){var n=0,s=document.currentScript;if(s)s.remove();function h(){parent.postMessage({agenticos:"height",height:Math.max(' +
    'document.documentElement.scrollHeight,document.body?document.body.scrollHeight:0)},"*")}' +
    'function m(t){var box=document.getElementById("mm");if(!box||!window.mermaid||!t.trim())return h();' +
    'mermaid.initialize({startOnLoad:false,securityLevel:"strict"});mermaid.render("m"+(++n),t).then(function(r){' +
    'box.innerHTML=r.svg;h()},h)}addEventListener("message",function(e){var d=e.data;' +
    'if(e.source!==parent||!d||d.agenticos!=="live")return;if(document.getElementById("mm"))m(String(d.text||""));' +
    'else{document.body.innerHTML=String(d.html||"");h()}});addEventListener("load",function(){h();' +
    'parent.postMessage({agenticos:"live_ready"},"*")})})();';
  var LIVE_HASH = null;
  function liveHash() {
    if (!LIVE_HASH) LIVE_HASH = "'sha256-" + btoa(String.fromCharCode.apply(null, sha256Plain(new TextEncoder().encode(LIVE_SCRIPT)))) + "'";
    return LIVE_HASH;
  }

  function policy(scripts) {
    var lib = libSource();
    var tiles = tileOrigin();
    return ["default-src 'none'", "script-src " + (scripts ? "'unsafe-inline' " : liveHash() + " ") + lib,
            "style-src 'unsafe-inline' " + lib, "img-src data: blob: " + lib + (tiles ? " " + tiles : ""), "font-src data:",
            "connect-src 'none'", "form-action 'none'", "base-uri " + (foreignBase() ? origin() + "/" : "'none'")].join("; ");
  }
  // A srcdoc frame resolves relative URLs against the page it sits on: on a shop's page (the widget) the
  // drawing's /apps/lib/… must still mean this deployment's bundle, so the frame is given its base.
  function foreignBase() { return origin() !== location.origin; }
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function withImages(content, images) {
    return String(content || "").replace(/\{\{image:([^}]*)\}\}/g, function (_, name) {
      return (images && images[name]) || "";
    });
  }
  // Until the call is complete: no scripts, no on* handlers, no javascript: URLs, nothing that navigates.
  // (The frame's policy refuses them as well; this keeps a half-written scene from even trying.)
  // Handlers are cut from the text before it is parsed as well: Chromium checks a handler attribute against the
  // page's Content-Security-Policy as the parser sets it, even in a DOMParser document that never runs it.
  var HANDLER_ATTR = /([\s/"'])on[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)/gi;
  function inert(markup) {
    var parsed = new DOMParser().parseFromString("<body>" + String(markup).replace(HANDLER_ATTR, "$1") + "</body>", "text/html");
    parsed.querySelectorAll("script, iframe, object, embed, meta, base, frame, frameset").forEach(function (n) { n.remove(); });
    parsed.querySelectorAll("*").forEach(function (n) {
      Array.prototype.slice.call(n.attributes).forEach(function (a) {
        if (/^on/i.test(a.name) || /^\s*(javascript|vbscript):/i.test(a.value)) n.removeAttribute(a.name);
      });
    });
    return parsed.body.innerHTML;
  }
  // Mermaid while it streams: only complete lines (a half-written line is a syntax error, not a drawing).
  function completeLines(text) { return text.slice(0, text.lastIndexOf("\n") + 1); }
  function head(live) {
    var lib = libSource();
    return '<!doctype html><html><head><meta charset="utf-8">' +
      '<meta http-equiv="Content-Security-Policy" content="' + esc(policy(!live)) + '">' +
      (foreignBase() ? '<base href="' + esc(origin()) + '/">' : "") +
      '<meta name="viewport" content="width=device-width, initial-scale=1">' +
      '<style>html,body{margin:0;background:transparent;font:15px/1.5 system-ui,sans-serif}svg{max-width:100%;height:auto}</style>' +
      (live ? "<script>" + LIVE_SCRIPT + "</script>" : '<script src="' + lib + 'agenticos-frame.js"></script>');
  }
  function documentFor(kind, content, images, live) {
    var lib = libSource();
    var body = withImages(content, images);
    if (kind === "mermaid" && live) {
      // The text arrives by message (live_ready), drawn by the frame's own script.
      return head(true) + '<script src="' + lib + 'mermaid.min.js"></script></head><body><div id="mm"></div></body></html>';
    }
    if (kind === "mermaid") {
      return head(false) + '<script src="' + lib + 'mermaid.min.js"></script></head><body><pre class="mermaid">' +
        esc(body) + '</pre><script>mermaid.initialize({startOnLoad:false,securityLevel:"strict"});' +
        'mermaid.run({querySelector:".mermaid"});</script></body></html>';
    }
    if (live) return head(true) + "</head><body>" + inert(body) + "</body></html>";
    return head(false) + "</head><body>" + body + "</body></html>";
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
    for (i = 0; i < (((len + 8) >> 6) << 4) + 16; i++) words[i] = 0;  // no holes: a hole reads as NaN
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

  // A tolerant reader of tool-call arguments while they stream: '{"kind": "svg", "content": "<svg><rec' reads as
  // {kind: "svg", content: "<svg><rec"}. {value, complete}: complete is false when the text stopped inside a
  // value (then the last string read is the one still being written). Written here rather than vendored: the
  // partial-JSON parsers on npm are ES modules for a build step this console does not have, and the drawing
  // needs only a few top-level strings and the edits list read with JSON's own escapes.
  var ESCAPES = {b: "\b", f: "\f", n: "\n", r: "\r", t: "\t"};
  function partialJSON(text) {
    text = String(text || "");
    var i = 0, n = text.length, cut = false;
    function space() { while (i < n && " \t\r\n".indexOf(text.charAt(i)) >= 0) i++; }
    function string() {
      var out = "";
      i++;  // the opening quote
      while (i < n) {
        var c = text.charAt(i);
        if (c === '"') { i++; return out; }
        if (c !== "\\") { out += c; i++; continue; }
        if (i + 1 >= n) break;
        var e = text.charAt(i + 1);
        if (e === "u") {
          if (i + 6 > n) break;  // a \u escape not written out yet
          out += String.fromCharCode(parseInt(text.substr(i + 2, 4), 16) || 0);
          i += 6;
        } else { out += ESCAPES[e] || e; i += 2; }
      }
      cut = true;
      return out;
    }
    function container(close, item) {
      i++;
      for (;;) {
        space();
        if (i >= n) { cut = true; return; }
        var c = text.charAt(i);
        if (c === close) { i++; return; }
        if (c === ",") { i++; continue; }
        if (!item() || cut) { cut = true; return; }
      }
    }
    function value() {
      space();
      if (i >= n) { cut = true; return undefined; }
      var c = text.charAt(i);
      if (c === '"') return string();
      if (c === "{") {
        var obj = {};
        container("}", function () {
          if (text.charAt(i) !== '"') return false;
          var key = string();
          if (cut) return false;
          space();
          if (text.charAt(i) !== ":") return false;
          i++;
          var v = value();
          if (v !== undefined) obj[key] = v;
          return true;
        });
        return obj;
      }
      if (c === "[") {
        var list = [];
        container("]", function () { var v = value(); if (v !== undefined) list.push(v); return true; });
        return list;
      }
      var m = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 40));
      if (!m) { cut = true; return undefined; }
      i += m[0].length;
      if (i >= n) cut = true;  // a number may go on
      return JSON.parse(m[0]);
    }
    var out = value();
    return {value: out, complete: !cut};
  }
  function parsedArgs(args) {
    if (args && typeof args === "object") return {value: args, complete: true};
    if (typeof args !== "string") return {value: {}, complete: true};
    var read = partialJSON(args);
    if (!read.value || typeof read.value !== "object" || Array.isArray(read.value)) read.value = {};
    return read;
  }

  // A revision while it streams: the complete edits, and the last one once its old text is whole (its new text
  // grows as it is written); an edit that does not apply leaves the revised drawing as it was.
  function liveEdits(edits, complete) {
    edits = Array.isArray(edits) ? edits.filter(function (e) { return e && typeof e === "object"; }) : [];
    if (complete || !edits.length) return edits;
    var last = edits[edits.length - 1];
    return typeof last.new_text === "string" ? edits : edits.slice(0, -1);
  }

  function describe(call) {
    var read = parsedArgs(call.args), args = read.value;
    var result = call.result && typeof call.result === "object" ? call.result : null;
    if (call.tool_name === "revise_visual") {
      var base = byId[args.visual_id];
      var content = result && result.content || null;
      if (!content && base) {
        var edits = liveEdits(args.edits, read.complete);
        content = applyEdits(base.content, edits);
        if (content === null && !read.complete) content = applyEdits(base.content, edits.slice(0, -1));
      }
      return {kind: (result && result.visual_kind) || (base && base.kind) || "html", content: content,
              images: (result && result.images) || (base && base.images) || {},
              title: (result && result.title) || args.title || (base && base.title) || ""};
    }
    // A visitor whose page hides a step's arguments gets the drawing in its result (embeds/frames.py).
    var drawn = typeof args.content === "string" ? args.content : result && result.content;
    return {kind: args.kind || (result && result.visual_kind) || "html", content: drawn,
            images: (result && result.images) || {}, title: args.title || (result && result.title) || ""};
  }

  function frameBox(el, title) {
    var box = el.querySelector("[data-visual]");
    if (box) return box;
    box = document.createElement("figure");
    box.className = "visual";
    box.setAttribute("data-visual", "");
    var frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.setAttribute("title", title || "Visual");
    frame.style.cssText = "width:100%;min-height:120px;border:0;display:block";
    box.appendChild(frame);
    var cap = document.createElement("figcaption");
    cap.className = "muted";
    box.appendChild(cap);
    el.appendChild(box);
    return box;
  }
  function entryOf(iframe, box) {
    // Frames no longer in the page (a turn drawn again) are forgotten.
    mounted = mounted.filter(function (m) { return m.iframe === iframe || m.iframe.isConnected; });
    var entry = mounted.find(function (m) { return m.iframe === iframe; });
    if (!entry) { entry = {iframe: iframe, el: box}; mounted.push(entry); }
    return entry;
  }
  // The markup so far, posted into the growing frame (or drawn with it, the first time).
  function liveMessage(v) {
    var body = withImages(v.content, v.images);
    return v.kind === "mermaid" ? {agenticos: "live", text: completeLines(body)} : {agenticos: "live", html: inert(body)};
  }

  function render(call, el) {
    call = call || {};
    var v = describe(call);
    var result = call.result && typeof call.result === "object" ? call.result : null;
    var id = (result && result.visual_id) || (call.tool_name === "draw" ? call.tool_call_id : null);
    if (id && typeof v.content === "string" && !call.streaming) byId[id] = v;
    var box = frameBox(el, v.title);
    box.querySelector("figcaption").textContent = v.title || "";
    if (typeof v.content !== "string" || !v.content) return box;
    var iframe = box.querySelector("iframe");
    var entry = entryOf(iframe, box);
    if (call.streaming) {
      var message = liveMessage(v), text = JSON.stringify(message);
      if (entry.liveText === text) return box;
      entry.liveText = text;
      if (entry.live && entry.ready && post(entry, message)) return box;
      if (entry.live) return box;  // loading (or out of the page): live_ready sends the latest
      entry.live = true;
      entry.ready = false;
      entry.report = false;
      iframe.__key = null;
      load(entry, documentFor(v.kind, v.kind === "mermaid" ? "" : v.content, v.images, true));
      return box;
    }
    var key = "final:" + v.kind + "\n" + v.content;
    if (iframe.__key === key) return box;
    iframe.__key = key;
    entry.live = false;
    entry.liveText = null;
    entry.report = !result; // the tool is still waiting for this drawing's report
    entry.digest = null;
    entry.pending = null;
    sha256(v.kind + "\n" + v.content).then(function (d) { entry.digest = d; flush(entry); });
    load(entry, documentFor(v.kind, v.content, v.images, false));
    return box;
  }

  // A frame out of the page (its turn being drawn again) has no window: it loads its document afresh once it is back,
  // and says so (frame_ready, then live_ready for a growing one), so nothing is lost by not posting now.
  function post(entry, message) {
    var win = entry.iframe.contentWindow;
    if (!win) { entry.ready = false; return false; }
    win.postMessage(message, "*");
    return true;
  }

  // The frame is (re)loaded; its document follows when it says it is ready (frame_ready, below).
  function load(entry, html) {
    entry.doc = html;
    entry.iframe.src = origin() + FRAME_PATH + "?n=" + (++loads);
  }

  function flush(entry) {
    if (!entry.pending || !entry.digest) return;
    var errors = entry.pending;
    entry.pending = null;
    if (!options.reports) return;  // a visitor's surface: nobody to report to, and the errors are the model's
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
    if (!ev.source) return;  // a frame already gone (a detached frame's window is null too: never match on it)
    var entry = mounted.find(function (m) { return m.iframe.contentWindow === ev.source; });
    var data = ev.data;
    if (!entry || !data || typeof data !== "object") return;
    if ((data.agenticos === "height" || data.agenticos === "report") && data.height > 0) {
      entry.iframe.style.height = Math.min(Math.max(data.height, 120), 2000) + "px";
    }
    if (data.agenticos === "frame_ready") {
      if (entry.doc) post(entry, {agenticos: "document", html: entry.doc});
    } else if (data.agenticos === "live_ready") {
      if (!entry.live) return;  // a growing frame that was replaced by the finished drawing
      entry.ready = true;
      if (entry.liveText) post(entry, JSON.parse(entry.liveText));
    } else if (data.agenticos === "report") {
      if (entry.live) return;
      entry.pending = Array.isArray(data.errors) ? data.errors.map(String).slice(0, 20) : [];
      flush(entry);
    } else if (data.agenticos === "follow_up") {
      offerFollowUp(entry, String(data.text || "").slice(0, 500));
    }
  });

  function configure(values) {
    Object.keys(values || {}).forEach(function (k) { if (k in options) options[k] = values[k]; });
  }

  window.AgenticVisuals = {render: render, documentFor: documentFor, partialJSON: partialJSON, configure: configure,
                           digest: function (kind, content) { return sha256(kind + "\n" + content); }};
})();
