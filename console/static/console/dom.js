// The DOM helpers every console module uses (web chat, the Builder, the CRUD pages): written once here.
// The shared turn renderer (turn.js) keeps its own copy of h() and fill(): it is a classic script the website
// widget loads on other sites, where it cannot import a module from this server.

// An element: attrs.text sets its text, attrs.html its markup (trusted markup only), any other attribute is set
// unless null, undefined or false; children are nodes or strings.
export function h(tag, attrs, children) {
  const node = document.createElement(tag);
  Object.keys(attrs || {}).forEach((k) => {
    if (k === "text") node.textContent = attrs[k];
    else if (k === "html") node.innerHTML = attrs[k];
    else if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false) node.setAttribute(k, attrs[k]);
  });
  (children || []).forEach((c) => { if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
  return node;
}

// A translated string with Python's %(name)s placeholders (console/strings.py) filled in.
export function fill(template, values) {
  return String(template).replace(/%\((\w+)\)s/g, (_, key) => (values[key] !== undefined ? values[key] : ""))
    .replace(/%%/g, "%");
}

// Django's CSRF token for a fetch: the form's hidden field when given one, else the cookie, else the token
// base.html puts in <meta name="csrf-token"> (which also makes Django set the cookie on every console page).
export function csrf(form) {
  const field = form && form.querySelector("input[name=csrfmiddlewaretoken]");
  if (field) return field.value;
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

// POST to a console or /api/ URL; answers {ok, status, json} (json {} when the body is not JSON).
export function post(url, body, {json = false, form = null} = {}) {
  const headers = {"X-CSRFToken": csrf(form), "Accept": "application/json"};
  if (json) headers["Content-Type"] = "application/json";
  return fetch(url, {method: "POST", credentials: "same-origin", headers,
                     body: json ? JSON.stringify(body || {}) : body})
    .then((r) => r.json().then((j) => ({ok: r.ok, status: r.status, json: j}),
                               () => ({ok: r.ok, status: r.status, json: {}})));
}

// The JSON error envelope's message ({"error": {"code", "message"}}), or "".
export function errorMessage(json) {
  return ((json || {}).error || {}).message || "";
}

// Once the document is parsed (a module script is deferred already; this is for code also run later).
export function ready(run) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run); else run();
}
