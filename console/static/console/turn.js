/* One turn renderer for every surface (web chat, the website widget, the hosted page): a turn's parts —
   text (marked + DOMPurify, highlighted code with a copy button, tables), thinking, tool steps on the
   narrated rail, charts, generated files, visuals — drawn the same way live (from socket frames) and reopened
   (from the stored transcript). What a surface may see is decided on the server (the embed toggles): this
   module draws whatever it is given.

   A turn: {role: "user"|"assistant", text?, parts: [{type: "text"|"thinking", text} |
            {type: "tool", call: {id, name, args, result, status: running|ok|error|parked}} | {type: other…}],
            compacting?}.

   AgenticTurn.create(options) → renderer; renderer.render(container, turns) updates `container` in place,
   keyed: a turn or a part whose content did not change keeps its node (an open step stays open, a drawing is
   not reloaded, a streamed answer re-renders only its last paragraph's part).

   options: strings, phrases (translations; English defaults below), mediaUrl(filename, download) → URL of a
   generated file on this surface, part(part, turn) → a node for a part type this module does not know (web
   chat's delegation panels), head(turn) / foot(turn) → nodes around a turn's parts, user(turn) → the node of a
   person's turn, assistantClass, fileCard(call) → node or null, openSteps {call id: bool}, version(turn) → what
   else a turn's drawing depends on, onChange() → called when a reader's fold/unfold needs a re-render, libs: {marked, DOMPurify, hljs,
   charts, visuals} (defaults: the page's globals), actions(turn) → buttons under a message (web chat's Copy,
   Regenerate, Edit and resend), liveLinks (web chat, members only): a browse step's "Watch the browser" link. */
(function (global) {
  "use strict";

  // The same English as console/strings.py; web chat passes the translated ones.
  var STRINGS = {
    running_tool: "Running %(name)s", ran_tool: "Ran %(name)s", failed_tool: "%(phrase)s — failed",
    waiting_approval: "%(phrase)s — waiting for approval", waiting_answer: "Waiting for your answer",
    earlier_step: "1 earlier step", earlier_steps: "%(n)s earlier steps", hide_steps: "Hide earlier steps",
    raw: "Raw arguments and result", arguments: "Arguments", result: "Result", no_result: "No result yet.",
    thinking: "Reasoning", chart: "Chart", you: "You", copy: "Copy", copied: "Copied",
    copy_code: "Copy code", download: "Download", summarizing: "Summarizing the conversation…",
    compaction_gave_up: "Long conversations is not compacting this run: the instructions and tool descriptions alone take %(overhead)s tokens, over its trigger of %(trigger)s tokens (of a %(window)s-token window). Raise the binding's context window or bind fewer tools.",
    sources: "Sources", page: "page %(page)s", source_of: "Source %(n)s: %(document)s",
  };
  var PHRASES = {
    create_chart: {running: "Drawing a chart", done: "Drew a chart"},
    run_python: {running: "Running a calculation", done: "Ran a calculation"},
    search_documents: {running: "Searching the documents", done: "Searched the documents"},
  };
  var GENERATED = /^(?:https?:\/\/[^/]+)?\/api\/v1\/generated\/([0-9a-f]{32}\.([a-z0-9]{2,5}))(?:\?.*)?$/;
  var IMAGE = ["png", "jpg", "jpeg", "webp", "gif"], AUDIO = ["mp3", "wav"], VIDEO = ["mp4"];
  var VISUAL_TOOLS = ["draw", "revise_visual"];

  function fill(template, values) {
    return String(template).replace(/%\((\w+)\)s/g, function (_, k) { return values[k] !== undefined ? values[k] : ""; })
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
  // Keys sorted: the stored transcript (PostgreSQL jsonb) does not keep the order a live frame had, and the
  // reopened turn must read exactly like the live one.
  function sortedKeys(value) {
    if (Array.isArray(value)) return value.map(sortedKeys);
    if (!value || typeof value !== "object") return value;
    var out = {};
    Object.keys(value).sort().forEach(function (k) { out[k] = sortedKeys(value[k]); });
    return out;
  }
  function pretty(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") return value;
    try { return JSON.stringify(sortedKeys(value), null, 2); } catch (e) { return String(value); }
  }
  // A knowledge search's passages (capabilities/knowledge: search_documents), read from the text the tool gives the
  // model (knowledge/search.py render): "[n] <document>[, page <p>][ (with surrounding text)]" then the passage, the
  // blocks numbered 1, 2, 3… in order — a header that breaks the count is part of a passage, not a new source.
  // The model reads that text and cites it; the reader sees the same passages as sources, each opening its text.
  var KNOWLEDGE_TOOLS = ["search_documents"];
  var SOURCE_HEAD = /^\[(\d+)\] (.+)$/;
  function knowledgeSources(call) {
    if (KNOWLEDGE_TOOLS.indexOf(call.name) < 0 || call.status !== "ok" || typeof call.result !== "string") return null;
    var lines = call.result.split("\n"), out = [], current = null;
    lines.forEach(function (line, i) {
      var head = SOURCE_HEAD.exec(line);
      if (head && Number(head[1]) === out.length + 1 && (i === 0 || lines[i - 1] === "")) {
        if (current) current.passage = current.passage.replace(/\n+$/, "");
        var cite = head[2], expanded = / \(with surrounding text\)$/.test(cite);
        cite = cite.replace(/ \(with surrounding text\)$/, "");
        var paged = /^(.*), page (\d+)$/.exec(cite);
        current = {n: out.length + 1, document: paged ? paged[1] : cite, page: paged ? Number(paged[2]) : null,
                   expanded: expanded, passage: ""};
        out.push(current);
      } else if (current) {
        current.passage += (current.passage ? "\n" : "") + line;
      }
    });
    if (current) current.passage = current.passage.replace(/\n+$/, "");
    return out.length ? out : null;
  }

  function cssEscape(text) { return global.CSS && CSS.escape ? CSS.escape(String(text)) : String(text).replace(/["\\]/g, "\\$&"); }
  function humanize(name) { return String(name || "").replace(/^mcp__[^_]+__/, "").replace(/[_-]+/g, " ").trim(); }

  function copyText(text) {
    if (navigator.clipboard && global.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain-http deployments have no async clipboard: the old selection copy still works on a click.
    var area = h("textarea", {readonly: "", style: "position:fixed;top:-1000px;opacity:0"});
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { area.remove(); }
    return Promise.resolve();
  }

  function create(options) {
    var o = options || {};
    var T = Object.assign({}, STRINGS, o.strings || {});
    var P = Object.assign({}, PHRASES, o.phrases || {});
    var libs = o.libs || {};
    function lib(name, globalName) { return libs[name] || global[globalName]; }
    var openSteps = o.openSteps || {};  // call id → open/closed as the reader left it (or as the surface chose)
    var expandedRails = {}; // first call id of a rail → "N earlier steps" unfolded
    var changed = o.onChange || function () {};

    // ------------------------------------------------------------ generated files

    function mediaKind(ext) {
      return IMAGE.indexOf(ext) >= 0 ? "image" : AUDIO.indexOf(ext) >= 0 ? "audio" : VIDEO.indexOf(ext) >= 0 ? "video" : "";
    }
    function mediaUrl(filename, download) {
      if (o.mediaUrl) return o.mediaUrl(filename, download);
      return "/api/v1/generated/" + filename + (download ? "?download=1" : "");
    }
    function generatedName(url) {
      var m = GENERATED.exec(String(url || ""));
      return m && mediaKind(m[2]) ? {filename: m[1], kind: mediaKind(m[2])} : null;
    }
    // An image inline, audio and video as players, each with Download.
    function mediaFigure(file, label) {
      var src = mediaUrl(file.filename, false);
      var player = file.kind === "image" ? h("img", {src: src, alt: label || "", loading: "lazy"})
        : h(file.kind, {src: src, controls: "", preload: "metadata"});
      return h("figure", {class: "generated generated-" + file.kind, "data-generated": file.kind}, [player,
        h("figcaption", {}, [label ? h("span", {class: "generated-name", text: label + " "}) : null,
          h("a", {href: mediaUrl(file.filename, true), download: file.filename, text: T.download})])]);
    }

    // ------------------------------------------------------------ markdown

    function highlight(pre) {
      var code = pre.querySelector("code");
      if (!code) return;
      var hljs = lib("hljs", "hljs");
      var language = (/language-([\w+#-]+)/.exec(code.className) || [])[1];
      if (hljs) {
        try {
          var done = language && hljs.getLanguage(language) ? hljs.highlight(code.textContent, {language: language})
            : hljs.highlightAuto(code.textContent);
          code.innerHTML = done.value;  // highlight.js escapes the text it wraps in spans
          code.classList.add("hljs");
          if (done.language) code.setAttribute("data-language", done.language);
        } catch (e) { /* unknown grammar: the plain text stays */ }
      }
      var button = h("button", {type: "button", class: "copy-code", "data-copy": "", "aria-label": T.copy_code, text: T.copy});
      button.addEventListener("click", function () {
        copyText(code.textContent.replace(/\n$/, "")).then(function () {
          button.textContent = T.copied;
          setTimeout(function () { button.textContent = T.copy; }, 1500);
        });
      });
      pre.classList.add("code-block");
      pre.insertBefore(button, pre.firstChild);
    }

    // LaTeX in an answer ($…$, $$…$$, \(…\), \[…\]) drawn by the vendored KaTeX. The formulas are taken out before
    // markdown reads the text (its emphasis and escapes would eat `_`, `*` and `\\`) and put back, rendered, after
    // DOMPurify: KaTeX writes its own markup from the formula's text (trust off, no raw HTML from the formula).
    // Code spans and blocks keep their dollars. Without KaTeX on the page a formula stays as it was written.
    function takeMath(text) {
      var formulas = [];
      var CODE = /(```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]*`)/;
      // $…$ inline only when it reads as math: no space inside its ends, and no digit right after ("$5 and $10").
      var MATH = /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\\\(([\s\S]+?)\\\)|\$(?!\s)((?:\\\$|[^$\n])+?)(?<!\s)\$(?!\d)/g;
      var out = String(text || "").split(CODE).map(function (piece, i) {
        if (i % 2 === 1) return piece;  // a code span or block
        return piece.replace(MATH, function (all, block, bracket, paren, inline) {
          var display = block !== undefined || bracket !== undefined;
          formulas.push({tex: block || bracket || paren || inline, display: display, source: all});
          return "\uE000" + (formulas.length - 1) + "\uE001";
        });
      }).join("");
      return {text: out, formulas: formulas};
    }
    function putMath(html, formulas) {
      var katex = lib("katex", "katex");
      return html.replace(/\uE000(\d+)\uE001/g, function (_, i) {
        var f = formulas[Number(i)];
        if (!f) return "";
        if (!katex) return h("span", {text: f.source}).innerHTML;
        try {
          return katex.renderToString(f.tex, {displayMode: f.display, throwOnError: false, trust: false, output: "htmlAndMathml"});
        } catch (e) { return h("span", {text: f.source}).innerHTML; }
      });
    }

    function markdown(text) {
      var marked = lib("marked", "marked"), purify = lib("DOMPurify", "DOMPurify");
      var box = h("div");
      var math = takeMath(text);
      var html = marked ? marked.parse(math.text, {gfm: true, breaks: true}) : null;
      if (html !== null && purify) box.innerHTML = putMath(purify.sanitize(html), math.formulas);
      else box.textContent = String(text || "");  // never unsanitized markup
      box.querySelectorAll("pre").forEach(highlight);
      box.querySelectorAll("table").forEach(function (table) {
        var wrap = h("div", {class: "table-wrap"});
        table.parentNode.insertBefore(wrap, table);
        wrap.appendChild(table);
      });
      box.querySelectorAll("a[href]").forEach(function (a) {
        var file = generatedName(a.getAttribute("href"));
        if (file) { a.parentNode.replaceChild(mediaFigure(file, a.textContent.trim()), a); return; }
        a.setAttribute("target", "_blank");
        a.setAttribute("rel", "noopener noreferrer nofollow");
      });
      box.querySelectorAll("img[src]").forEach(function (img) {
        if (img.closest("[data-generated]")) return;  // drawn just above, from a link
        var file = generatedName(img.getAttribute("src"));
        if (file) img.parentNode.replaceChild(mediaFigure(file, img.getAttribute("alt") || ""), img);
      });
      return box;
    }

    // ------------------------------------------------------------ steps

    function isChart(call) {
      var charts = lib("charts", "AgenticCharts");
      return !!charts && charts.isChart(call.result);
    }
    // A call's arguments as an object: a drawing's are the partial JSON written so far while it streams.
    function argsOf(call) {
      if (typeof call.args !== "string") return call.args || {};
      var visuals = lib("visuals", "AgenticVisuals"), read = visuals && visuals.partialJSON ? visuals.partialJSON(call.args).value : null;
      return read && typeof read === "object" ? read : {};
    }
    function isVisual(call) { return VISUAL_TOOLS.indexOf(call.name) >= 0 && !!lib("visuals", "AgenticVisuals"); }
    function shownOpen(call) { return isChart(call) || isVisual(call); } // an answer is shown wherever it is
    function resultFile(call) {
      var r = call.result;
      return r && typeof r === "object" && typeof r.url === "string" ? generatedName(r.url) : null;
    }

    function stepLine(call) {
      var phrases = P[call.name];
      var running = call.status === "running" || call.status === "parked";
      var phrase = phrases ? (running ? phrases.running : phrases.done)
                           : fill(running ? T.running_tool : T.ran_tool, {name: humanize(call.name)});
      var args = argsOf(call);
      var subject = args.title || args.timezone;
      if (subject && typeof subject === "string") phrase += ": " + subject;
      if (call.status === "error") return fill(T.failed_tool, {phrase: phrase});
      if (call.status === "parked") {
        if (call.name === "ask_user" || call.name === "ask_user_question") return T.waiting_answer;
        return fill(T.waiting_approval, {phrase: phrase});
      }
      return phrase;
    }

    // Sources as a reader opens them: the document and its page, a click showing the passage the answer used.
    function sourcesList(sources) {
      return h("ol", {class: "sources-list"}, sources.map(function (s) {
        var where = s.page ? " · " + fill(T.page, {page: s.page}) : "";
        return h("li", {}, [h("details", {class: "source", "data-source": s.document, "data-page": s.page || null}, [
          h("summary", {"aria-label": fill(T.source_of, {n: s.n, document: s.document + where})}, [
            h("span", {class: "source-n", "aria-hidden": "true", text: String(s.n)}),
            h("span", {class: "source-document", text: s.document}),
            where ? h("span", {class: "source-page", text: where}) : null]),
          h("blockquote", {class: "source-passage", "data-source-passage": "", text: s.passage}),
        ])]);
      }));
    }
    // Every source of a turn once, in the order the searches found them, under its answer.
    function turnSources(turn) {
      var seen = {}, all = [];
      (turn.parts || []).forEach(function (p) {
        if (p.type !== "tool") return;
        (knowledgeSources(p.call) || []).forEach(function (s) {
          var key = s.document + "\u0000" + s.page + "\u0000" + s.passage;
          if (seen[key]) return;
          seen[key] = true;
          all.push(Object.assign({}, s, {n: all.length + 1}));
        });
      });
      return all;
    }

    function resultView(call) {
      var card = o.fileCard ? o.fileCard(call) : null;
      if (card) return card;
      var sources = knowledgeSources(call);
      if (sources) return sourcesList(sources);
      if (isChart(call)) {
        return h("figure", {class: "chart", "data-chart": ""}, [lib("charts", "AgenticCharts").render(call.result),
          h("figcaption", {class: "visually-hidden", text: call.result.title || T.chart})]);
      }
      if (isVisual(call)) {
        var box = h("div", {class: "visual-box", "data-visual-box": call.id});
        drawVisual(call, box);
        return box;
      }
      var file = resultFile(call);
      if (file) return mediaFigure(file, call.result.name || call.result.filename || "");
      if (call.result === null || call.result === undefined) return h("p", {class: "muted", text: T.no_result});
      if (typeof call.result === "object" && !Array.isArray(call.result)) {
        var dl = h("dl", {class: "result-fields"});
        Object.keys(call.result).sort().slice(0, 12).forEach(function (key) {
          var v = call.result[key];
          dl.appendChild(h("dt", {text: humanize(key)}));
          dl.appendChild(h("dd", {text: typeof v === "object" ? JSON.stringify(v) : String(v)}));
        });
        return dl;
      }
      return h("pre", {class: "result-text", text: pretty(call.result)});
    }

    function drawVisual(call, box) {
      lib("visuals", "AgenticVisuals").render({tool_name: call.name, tool_call_id: call.id, args: call.args,
                                               result: call.result, streaming: call.status === "running" && !!call.streaming}, box);
    }
    // A drawing's step is updated where it stands rather than drawn again: its frame grows while the call is
    // written and runs once when it is complete (an iframe moved or rebuilt would load again).
    function refreshVisualStep(node, call) {
      node.className = "step status-" + call.status;
      node.setAttribute("data-status", call.status);
      node.querySelector("[data-step-line]").textContent = stepLine(call);
      node.querySelector(".raw-args").textContent = pretty(call.args);
      node.querySelector(".raw-result").textContent = pretty(call.result);
      var box = node.querySelector("[data-visual-box]");
      if (box) drawVisual(call, box);
    }
    function refreshVisuals(body, turn) {
      (turn.parts || []).forEach(function (p) {
        if (p.type !== "tool" || !isVisual(p.call)) return;
        var node = body.querySelector('[data-step="' + cssEscape(p.call.id) + '"]');
        if (!node) return;
        // A live call is changed in place: what it is now, cheaply (its result may carry megabytes of images).
        var call = p.call, state = [call.status, !!call.streaming, typeof call.args === "string" ? call.args.length : -1,
                                    call.result === null || call.result === undefined].join("|");
        if (node.__drawn && node.__drawn.call === call && node.__drawn.state === state) return;
        if (node.__built !== call) refreshVisualStep(node, call);
        node.__built = null;
        node.__drawn = {call: call, state: state};
      });
    }
    // What a step's rail depends on: a drawing's step only by its place (refreshVisuals keeps the rest current).
    function callSig(call) { return isVisual(call) ? {id: call.id, name: call.name, visual: true} : call; }

    // The live view of a browse: announced by a browser_live frame while it runs (call.live_url), or kept in a
    // browse_web result. A link, not an embed: the view has its own page (and take-over) on the server.
    function liveLink(call) {
      if (!o.liveLinks) return null;
      var url = call.live_url || (call.result && typeof call.result === "object" && call.result.live_url);
      if (typeof url !== "string" || url.charAt(0) !== "/") return null;  // same-origin paths only
      return h("a", {class: "watch-browser", href: url, target: "_blank", rel: "noopener", "data-watch-browser": "",
                     text: T.watch_browser});
    }

    // "Only a person can go on" (browser_needs_person): said on the running browse's step, with why, while it
    // runs (the stored result of a browse nobody took keeps the reason).
    function needsPerson(call) {
      if (!o.liveLinks || call.status !== "running" || typeof call.needs_person !== "string") return null;
      return h("span", {class: "needs-person", role: "status", "data-needs-person": ""}, [
        h("strong", {text: T.needs_person + " "}), document.createTextNode(call.needs_person.slice(0, 500)),
        h("span", {class: "muted", text: " " + T.needs_person_take})]);
    }

    function step(call) {
      var open = openSteps[call.id] === undefined ? shownOpen(call) || !!resultFile(call) : openSteps[call.id];
      if (shownOpen(call)) open = true;
      var details = h("details", {class: "step status-" + call.status, "data-step": call.id,
                                  "data-status": call.status, open: open ? "" : null}, [
        h("summary", {}, [h("span", {class: "step-dot", "aria-hidden": "true"}),
                          h("span", {class: "step-line", "data-step-line": "", text: stepLine(call)}), liveLink(call),
                          needsPerson(call)]),
        h("div", {class: "step-body"}, [
          resultView(call),
          h("details", {class: "raw", "data-raw": ""}, [
            h("summary", {text: T.raw}),
            h("h4", {text: T.arguments}), h("pre", {class: "raw-args", text: pretty(call.args)}),
            h("h4", {text: T.result}), h("pre", {class: "raw-result", text: pretty(call.result)}),
          ]),
        ]),
      ]);
      details.addEventListener("toggle", function () { if (!shownOpen(call)) openSteps[call.id] = details.open; });
      details.__built = call;  // drawn from this very call just now: nothing to refresh
      return details;
    }

    function railFolded(calls) {
      var keepAll = calls.some(function (c) { return c.status === "error" || c.status === "parked" || shownOpen(c); });
      return calls.length > 1 && !keepAll && !expandedRails[calls[0].id];
    }
    function rail(calls) {
      var key = calls[0].id;
      var keepAll = calls.some(function (c) { return c.status === "error" || c.status === "parked" || shownOpen(c); });
      var node = h("div", {class: "rail", "data-part": "rail", "data-rail": key});
      if (calls.length > 1 && !keepAll) {
        var expanded = !!expandedRails[key];
        var toggle = h("button", {type: "button", class: "rail-fold", "aria-expanded": expanded ? "true" : "false",
          "data-fold": "", text: expanded ? T.hide_steps : calls.length === 2 ? T.earlier_step : fill(T.earlier_steps, {n: calls.length - 1})});
        toggle.addEventListener("click", function () { expandedRails[key] = !expanded; changed(); });
        node.appendChild(toggle);
        if (!expanded) { node.appendChild(step(calls[calls.length - 1])); return node; }
      }
      calls.forEach(function (c) { node.appendChild(step(c)); });
      return node;
    }

    // ------------------------------------------------------------ parts, keyed

    // The drawable pieces of a turn, each with a key (its place) and a signature (its content and the
    // reader's fold state): a piece whose signature did not change keeps its node.
    function pieces(turn) {
      var out = [], batch = [], version = o.version ? o.version(turn) : null;
      function flush() {
        if (!batch.length) return;
        var calls = batch;
        out.push({key: "rail:" + calls[0].id, sig: JSON.stringify([calls.map(callSig), railFolded(calls), openState(calls), version]),
                  build: function () { return rail(calls); }});
        batch = [];
      }
      (turn.parts || []).forEach(function (part, i) {
        if (part.type === "tool") { batch.push(part.call); return; }
        if (part.type !== "text" && part.type !== "thinking") {
          if (!o.part) return;
          var made = o.part(part, turn);
          if (made === null || made === undefined) return;
          flush();
          out.push({key: part.type + ":" + i, sig: null, build: function () { return made; }});
          return;
        }
        flush();
        var text = part.text;
        if (part.type === "text") {
          out.push({key: "text:" + i, sig: text, build: function () {
            var node = markdown(text);
            node.className = "answer markdown";
            node.setAttribute("data-part", "text");
            return node;
          }});
        } else {
          out.push({key: "thinking:" + i, sig: text, build: function () {
            return h("details", {class: "thinking", "data-part": "thinking"}, [
              h("summary", {text: T.thinking}), h("div", {class: "thinking-text", text: text})]);
          }});
        }
      });
      flush();
      var sources = turn.live ? [] : turnSources(turn);  // once the answer is written: the sources it drew on
      if (sources.length) {
        out.push({key: "sources", sig: JSON.stringify(sources), build: function () {
          return h("section", {class: "sources", "data-part": "sources", "data-sources": "", "aria-label": T.sources}, [
            h("h4", {class: "sources-title", text: T.sources}), sourcesList(sources)]);
        }});
      }
      if (turn.compacting) {
        out.push({key: "compaction", sig: "1", build: function () {
          return h("p", {class: "compaction muted", role: "status", "data-compaction": "", text: T.summarizing});
        }});
      }
      var gaveUp = turn.compactionGaveUp;  // once a run; displaced by a real summary (capabilities/compaction)
      if (gaveUp) {
        out.push({key: "compaction-gave-up", sig: JSON.stringify(gaveUp), build: function () {
          var n = function (v) { return Number(v || 0).toLocaleString(); };
          return h("p", {class: "compaction notice", role: "status", "data-compaction-gave-up": "",
                         text: fill(T.compaction_gave_up, {overhead: n(gaveUp.overhead_tokens),
                                                           trigger: n(gaveUp.trigger_tokens), window: n(gaveUp.window_tokens)})});
        }});
      }
      return out;
    }
    function openState(calls) { return calls.map(function (c) { return openSteps[c.id]; }); }

    // Patch `parent`'s children to `list` (key, sig, build) without touching what is unchanged: a node with the
    // same key and signature stays where it is (an iframe moved in the DOM would reload).
    function patch(parent, list) {
      list.forEach(function (item, i) {
        var current = parent.children[i];
        if (current && current.__key === item.key && item.sig !== null && current.__sig === item.sig) return;
        var node = item.build();
        node.__key = item.key;
        node.__sig = item.sig;
        if (current && current.__key === item.key) parent.replaceChild(node, current);
        else if (current) parent.insertBefore(node, current);
        else parent.appendChild(node);
      });
      while (parent.children.length > list.length) parent.removeChild(parent.lastElementChild);
    }

    function actionsOf(turn) {
      var nodes = (o.actions ? o.actions(turn) : []).filter(Boolean);
      return nodes.length ? h("div", {class: "turn-actions", role: "group", "data-turn-actions": ""}, nodes) : null;
    }
    // A message's text as the person would paste it: what they wrote, or the answer's markdown source.
    function messageText(turn) {
      if (turn.role === "user") return turn.text || "";
      return (turn.parts || []).filter(function (p) { return p.type === "text"; })
        .map(function (p) { return p.text; }).join("\n\n").trim();
    }
    // Copy with the same "Copied" acknowledgement as a code block's button.
    function copyButton(getText, attrs) {
      var button = h("button", Object.assign({type: "button", class: "link turn-action", "data-action": "copy",
                                              "aria-label": T.copy_message, text: T.copy}, attrs || {}));
      button.addEventListener("click", function () {
        copyText(getText()).then(function () {
          button.textContent = T.copied;
          setTimeout(function () { button.textContent = T.copy; }, 1500);
        });
      });
      return button;
    }

    function userTurn(turn) {
      if (o.user) return o.user(turn);
      return h("article", {class: "turn turn-user", "data-turn": "user"}, [
        h("h3", {class: "visually-hidden", text: T.you}),
        h("div", {class: "bubble", text: turn.text || ""}),
        actionsOf(turn),
      ]);
    }

    function assistantArticle(turn, article) {
      if (!article) {
        article = h("article", {class: "turn turn-assistant" + (o.assistantClass ? " " + o.assistantClass : ""),
                                "data-turn": "assistant"});
        var head = o.head ? o.head(turn) : null;
        if (head) article.appendChild(head);
        article.appendChild(h("div", {class: "turn-body"}));
        article.appendChild(h("div", {class: "turn-foot"}));
      }
      article.setAttribute("data-run-id", turn.run_id || "");
      article.setAttribute("aria-busy", turn.live ? "true" : "false");
      var body = article.querySelector(":scope > .turn-body");
      patch(body, pieces(turn));
      refreshVisuals(body, turn);
      var foot = article.querySelector(":scope > .turn-foot");
      foot.replaceChildren.apply(foot, (o.foot ? o.foot(turn) : []).concat([actionsOf(turn)]).filter(Boolean));
      return article;
    }

    function turnSig(turn) {
      // A person's message shows its text and files: the stored copy a turn's end reads back (with its ids) is the
      // same message, and drawing it again would take away the button a click was landing on.
      if (turn.role === "user") {
        return JSON.stringify(["user", turn.text || "", turn.attachments || [], o.version ? o.version(turn) : null]);
      }
      return JSON.stringify([turn, turn.parts && turn.parts.filter(function (p) { return p.type === "tool"; })
        .map(function (p) { return [openSteps[p.call.id], expandedRails[p.call.id]]; }), o.version ? o.version(turn) : null]);
    }

    function render(container, turns) {
      turns.forEach(function (turn, i) {
        var key = i + ":" + turn.role;
        var current = container.children[i];
        var sig = turnSig(turn);
        if (current && current.__key === key && current.__sig === sig) return;
        var node;
        if (turn.role === "user") node = userTurn(turn);
        else node = assistantArticle(turn, current && current.__key === key ? current : null);
        node.__key = key;
        node.__sig = sig;
        if (node === current) return;
        if (current && current.__key === key) container.replaceChild(node, current);
        else if (current) container.insertBefore(node, current);
        else container.appendChild(node);
      });
      var extra = Array.prototype.filter.call(container.children, function (c, i) { return i >= turns.length && c.__key; });
      extra.forEach(function (c) { c.remove(); });
    }

    return {render: render, markdown: markdown, rail: rail, stepLine: stepLine, strings: T, copyButton: copyButton,
            messageText: messageText,
            openSteps: openSteps, generatedName: generatedName, mediaFigure: mediaFigure};
  }

  // ------------------------------------------------------------ drawings while their arguments stream

  // part_start names a tool call (tool_name, tool_call_id) and tool_call_delta frames then carry its arguments as
  // partial JSON, by part index. A drawing's call (draw / revise_visual) joins the turn at its start — its
  // arguments the text written so far, flagged `streaming` — so visuals.js grows it while the model writes it;
  // the call's tool_call frame completes it, and then it runs once like any drawing. Web chat (chat.js) and the
  // embeds' fold below both apply their frames through this.
  function drawings() {
    var open = {};  // part index → the drawing call being written
    function find(parts, id) {
      for (var i = 0; i < parts.length; i++) if (parts[i].type === "tool" && parts[i].call.id === id) return parts[i].call;
      return null;
    }
    // Apply one frame to a live turn's parts; true when they changed.
    function apply(parts, f) {
      var d = f.data || {};
      switch (f.type) {
        case "model_request_start": open = {}; return false;
        case "part_start":
          if (d.index === 0) open = {}; else delete open[d.index];  // index 0 starts a new model response
          if (d.part_type !== "tool-call" || VISUAL_TOOLS.indexOf(d.tool_name) < 0 || !d.tool_call_id) return false;
          if (find(parts, String(d.tool_call_id))) return false;
          var started = {id: String(d.tool_call_id), name: d.tool_name, args: "", result: null, status: "running",
                         streaming: true};
          parts.push({type: "tool", call: started});
          open[d.index] = started;
          return true;
        case "tool_call_delta":
          var writing = open[d.index];
          if (!writing || !writing.streaming || typeof d.args_delta !== "string") return false;
          writing.args += d.args_delta;
          return true;
        case "tool_call":
          var known = find(parts, d.tool_call_id);
          if (!known || !known.streaming) return false;
          Object.keys(open).forEach(function (k) { if (open[k] === known) delete open[k]; });
          // A visitor who is not shown a step's arguments gets none here: the drawing stays as it grew until its
          // result brings it whole (embeds/frames.py), and only then runs.
          if (!d.args) return true;
          known.args = d.args;
          known.streaming = false;
          return true;
      }
      return false;
    }
    return {apply: apply, reset: function () { open = {}; }};
  }

  // ------------------------------------------------------------ frames → turns (the embeds' sockets)

  // A public socket's frames (embeds/frames.py: already filtered by the page's toggles) folded into the turn
  // model above, so a live turn and its reopened transcript are one shape. Web chat keeps its own fold
  // (delegations, approvals and questions ride on the same frames there).
  function stream() {
    var pendingKind = null, turn = null, drawing = drawings();
    function live(turns) {
      if (!turn) { turn = {role: "assistant", parts: [], live: true}; turns.push(turn); }
      return turn;
    }
    function addText(turns, kind, content) {
      if (!content) return;
      var parts = live(turns).parts, last = parts[parts.length - 1];
      if (last && last.type === kind && pendingKind !== kind) last.text += content;
      else parts.push({type: kind, text: content});
      pendingKind = null;
    }
    function call(turns, id) {
      var parts = live(turns).parts;
      for (var i = 0; i < parts.length; i++) if (parts[i].type === "tool" && parts[i].call.id === id) return parts[i].call;
      return null;
    }
    // Apply one frame; true when the turns changed.
    function apply(turns, f) {
      var d = f.data || {};
      if (turn) turn.compacting = false;
      // A drawing's call joins at its start and grows with its arguments; its tool_call completes it.
      var drew = (f.type === "part_start" || f.type === "tool_call_delta" || f.type === "tool_call") &&
        drawing.apply(live(turns).parts, f);
      if (f.type === "tool_call_delta") return drew;
      switch (f.type) {
        case "model_request_start": live(turns); return true;
        case "part_start":
          live(turns);
          if (d.part_type === "text" || d.part_type === "thinking") pendingKind = d.part_type;
          return true;
        case "text_delta": addText(turns, "text", d.content); return true;
        case "thinking_delta": addText(turns, "thinking", d.content); return true;
        case "compaction": {
          var compacted = live(turns);
          compacted.compacting = d.status === "summarizing";
          if (d.status === "gave_up") compacted.compactionGaveUp = d;
          else if (compacted.compacting) compacted.compactionGaveUp = null;
          return true;
        }
        case "resumed": {
          // The worker running this turn was lost and another goes on from its last step: the turn is redrawn as
          // that step left it (what streamed after it is streamed again), keeping the steps already drawn.
          var t = live(turns), drawn = {};
          t.parts.forEach(function (p) { if (p.type === "tool") drawn[p.call.id] = p; });
          t.parts = (d.parts || []).map(function (p) {
            if (p.type !== "tool") return {type: p.type, text: p.text};
            return drawn[p.tool_call_id] || {type: "tool", call: {id: p.tool_call_id, name: p.tool_name || "", args: {},
                                                                  result: null, status: "running"}};
          });
          pendingKind = null;
          drawing.reset();
          return true;
        }
        case "tool_call":
          if (!call(turns, d.tool_call_id)) {
            live(turns).parts.push({type: "tool", call: {id: d.tool_call_id, name: d.tool_name, args: d.args || {},
                                                         result: null, status: "running"}});
          }
          pendingKind = null;
          return true;
        case "tool_result":
          var c = call(turns, d.tool_call_id);
          if (!c) { c = {id: d.tool_call_id, name: "", args: {}, result: null}; live(turns).parts.push({type: "tool", call: c}); }
          c.result = d.content === undefined ? null : d.content;
          c.status = d.ok === false ? "error" : "ok";
          return true;
        case "final_result":
          // The answer when nothing was streamed as text (an output tool): otherwise the deltas already drew it.
          if (d.output && !live(turns).parts.some(function (p) { return p.type === "text"; })) {
            turn.parts.push({type: "text", text: String(d.output)});
          }
          return true;
        case "complete":
        case "error":
          if (turn) {
            // Results hidden by the page's toggles never arrive: a finished turn's steps are done.
            turn.parts.forEach(function (p) { if (p.type === "tool" && p.call.status === "running") p.call.status = "ok"; });
            turn.live = false;
            if (d.run_id) turn.run_id = d.run_id;  // an embed's `complete` names the run a visitor's 👍/👎 names
            if (f.type === "error") turn.error = d.message || "";
            if (!turn.parts.length && f.type === "complete") turns.splice(turns.indexOf(turn), 1);
          }
          turn = null;
          pendingKind = null;
          drawing.reset();
          return true;
      }
      return false;
    }
    return {apply: apply, reset: function () { turn = null; pendingKind = null; drawing.reset(); }};
  }

  // A stored message of an embed's history ({role, text, parts?, at, run_id?, feedback?}) as a turn.
  function fromHistory(m) {
    if (m.role === "user") return {role: "user", text: m.text || "", at: m.at, attachments: m.attachments || []};
    return {role: "assistant", parts: m.parts && m.parts.length ? m.parts : [{type: "text", text: m.text || ""}], at: m.at,
            run_id: m.run_id || null, feedback: m.feedback || null};
  }

  // ------------------------------------------------------------ a visitor's 👍/👎 (the widget, the hosted page)

  var FEEDBACK_STRINGS = {up: "Helpful", down: "Not helpful", comment: "What was wrong or right? (optional)",
                          send: "Send", thanks: "Thanks for your feedback."};
  var SVG = "http://www.w3.org/2000/svg";
  // A thumb drawn, not an emoji: a system without an emoji font would show an empty box (👎 is the same, turned).
  function thumb() {
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 24 24"); svg.setAttribute("width", "16"); svg.setAttribute("height", "16");
    svg.setAttribute("aria-hidden", "true");
    var path = document.createElementNS(SVG, "path");
    path.setAttribute("fill", "currentColor");
    path.setAttribute("d", "M2 21h4V9H2v12zm20-11c0-1.1-.9-2-2-2h-6.3l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L13.17 1 " +
                           "6.59 7.59C6.22 7.95 6 8.45 6 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z");
    svg.appendChild(path);
    return svg;
  }
  // 👍/👎 under a finished answer of a visitor's surface, named by its run (embeds/consumers.py, the `feedback`
  // frame): a click sends the rating and opens a comment field; the pressed one again takes it back.
  // `send(frame)` is the surface's socket; its `feedback_saved` answer goes through `feedbackSaved`.
  function visitorFeedback(turn, options) {
    if (turn.role !== "assistant" || turn.live || !turn.run_id) return null;
    var S = Object.assign({}, FEEDBACK_STRINGS, options.strings || {});
    var given = turn.feedback || null;
    function rate(rating) {
      if (given && given.rating === rating) { options.send({type: "feedback", run_id: turn.run_id, rating: null}); return; }
      turn.commenting = true;
      options.send({type: "feedback", run_id: turn.run_id, rating: rating, comment: ""});
    }
    function button(rating, label) {
      var b = h("button", {type: "button", class: "turn-action feedback", "data-feedback": rating, "aria-label": label, title: label,
                           "aria-pressed": given && given.rating === rating ? "true" : "false"}, [thumb()]);
      b.addEventListener("click", function () { rate(rating); });
      return b;
    }
    var group = h("span", {class: "feedback-buttons visitor-feedback", role: "group", "aria-label": S.up + " / " + S.down, "data-feedback-buttons": ""},
                  [button("up", S.up), button("down", S.down)]);
    if (given && turn.commenting) {
      var field = h("textarea", {rows: "2", maxlength: "2000", "aria-label": S.comment, placeholder: S.comment, "data-feedback-comment": ""});
      var form = h("form", {class: "feedback-form", "data-feedback-form": ""}, [field, h("button", {type: "submit", text: S.send})]);
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        turn.commenting = false;
        turn.thanked = true;
        options.send({type: "feedback", run_id: turn.run_id, rating: given.rating, comment: field.value});
      });
      group.appendChild(form);
    } else if (given && turn.thanked) {
      group.appendChild(h("span", {class: "feedback-thanks", role: "status", text: S.thanks}));
    }
    return group;
  }
  // The server's answer to a rating: the turn of that run shows what is stored. True when a turn changed.
  function feedbackSaved(turns, data) {
    var turn = turns.filter(function (t) { return t.role === "assistant" && t.run_id === data.run_id; })[0];
    if (!turn) return false;
    turn.feedback = data.rating ? {rating: data.rating, comment: data.comment || ""} : null;
    if (!data.rating) { turn.commenting = false; turn.thanked = false; }
    return true;
  }

  global.AgenticTurn = {create: create, stream: stream, drawings: drawings, fromHistory: fromHistory, fill: fill, h: h, pretty: pretty,
                        thumb: thumb,
                        humanize: humanize, visitorFeedback: visitorFeedback, feedbackSaved: feedbackSaved};
})(typeof window !== "undefined" ? window : this);
