/* A small, safe Markdown renderer shared by widget.js and the hosted page.
   Everything is HTML-escaped first; only the markup produced here reaches innerHTML.
   Links are kept only for http(s) and mailto. No dependencies. */
function aosEsc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}
function aosInline(s) {
  var codes = [];
  s = s.replace(/`([^`\n]+)`/g, function (_, c) { codes.push(c); return "\u0000" + (codes.length - 1) + "\u0000"; });
  s = aosEsc(s);
  s = s.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, function (m, text, url) {
    var u = url.replace(/&amp;/g, "&");
    if (!/^(https?:\/\/|mailto:)/i.test(u)) return text;
    return '<a href="' + aosEsc(u) + '" target="_blank" rel="noopener noreferrer nofollow">' + text + "</a>";
  });
  s = s.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>").replace(/__([^_\n]+)__/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>").replace(/(^|[^\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>");
  s = s.replace(/~~([^~\n]+)~~/g, "<del>$1</del>");
  return s.replace(/\u0000(\d+)\u0000/g, function (_, i) { return "<code>" + aosEsc(codes[+i]) + "</code>"; });
}
function aosMarkdown(src) {
  var lines = String(src || "").replace(/\r\n?/g, "\n").split("\n");
  var out = [], para = [], list = null, i = 0;
  function flushPara() { if (para.length) { out.push("<p>" + para.map(aosInline).join("<br>") + "</p>"); para = []; } }
  function flushList() { if (list) { out.push("<" + list.tag + ">" + list.items.map(function (it) { return "<li>" + aosInline(it) + "</li>"; }).join("") + "</" + list.tag + ">"); list = null; } }
  while (i < lines.length) {
    var line = lines[i], m;
    if (/^```/.test(line)) {
      flushPara(); flushList();
      var code = []; i++;
      while (i < lines.length && !/^```/.test(lines[i])) { code.push(lines[i]); i++; }
      out.push("<pre><code>" + aosEsc(code.join("\n")) + "</code></pre>"); i++; continue;
    }
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) { flushPara(); flushList(); var n = Math.min(m[1].length + 2, 6); out.push("<h" + n + ">" + aosInline(m[2]) + "</h" + n + ">"); i++; continue; }
    if ((m = /^\s*[-*+]\s+(.*)$/.exec(line)) || (m = /^\s*\d+[.)]\s+(.*)$/.exec(line))) {
      flushPara();
      var tag = /^\s*\d/.test(line) ? "ol" : "ul";
      if (!list || list.tag !== tag) { flushList(); list = { tag: tag, items: [] }; }
      list.items.push(m[1]); i++; continue;
    }
    if ((m = /^>\s?(.*)$/.exec(line))) { flushPara(); flushList(); out.push("<blockquote>" + aosInline(m[1]) + "</blockquote>"); i++; continue; }
    if (/^\s*$/.test(line)) { flushPara(); flushList(); i++; continue; }
    flushList(); para.push(line); i++;
  }
  flushPara(); flushList();
  return out.join("");
}
