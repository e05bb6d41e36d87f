"""The script that reads a page into rows: run by the server in the live DOM, never written by the model.

It returns the actionable elements a person could act on (links, buttons, fields, selects, things with a
button role or a click handler attribute), visible and not disabled, in document order, capped; and up to
`maxText` characters of the page's visible text. A field's value is never read back: the row says whether
it is filled, so a value the agent typed is never echoed into the model's next step.
"""

COLLECT = r"""
([cap, maxText]) => {
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], '
    + '[role=link], [role=checkbox], [role=tab], [role=menuitem], [onclick], [contenteditable=""], '
    + '[contenteditable=true]';
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim().slice(0, 80);
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none' && Number(st.opacity) > 0.05;
  };
  const labelOf = (el) => {
    if (el.labels && el.labels.length) return clean(el.labels[0].innerText);
    return clean(el.getAttribute('aria-label') || el.innerText || el.getAttribute('title')
      || el.getAttribute('alt') || el.getAttribute('placeholder') || el.getAttribute('name')
      || el.getAttribute('value') || '');
  };
  const rows = [], els = [];
  for (const el of document.querySelectorAll(sel)) {
    if (rows.length >= cap) break;
    if (!visible(el) || el.disabled) continue;
    const tag = el.tagName.toLowerCase();
    const type = (el.getAttribute('type') || '').toLowerCase();
    const row = {tag, label: labelOf(el)};
    if (tag === 'input' || tag === 'textarea') {
      row.kind = tag === 'textarea' ? 'text' : (type || 'text');
      if (['checkbox', 'radio'].includes(type)) row.checked = !!el.checked;
      else if (!['submit', 'button', 'reset', 'image'].includes(type)) row.filled = !!el.value;
      if (el.getAttribute('placeholder')) row.placeholder = clean(el.getAttribute('placeholder'));
    } else if (tag === 'select') {
      row.kind = 'select';
      row.options = Array.from(el.options).slice(0, 20).map((o) => clean(o.label || o.text));
      row.selected = el.selectedIndex >= 0 ? clean(el.options[el.selectedIndex].label) : '';
    } else if (tag === 'a') {
      row.kind = 'link';
      try { row.href = new URL(el.href).pathname.slice(0, 80); } catch (e) {}
    } else {
      row.kind = 'button';
    }
    rows.push(row); els.push(el);
  }
  const text = (document.body ? document.body.innerText : '').replace(/\n{3,}/g, '\n\n').trim();
  return {rows, els, text: text.slice(0, maxText), truncated: text.length > maxText};
}
"""

# Where a browser would show it is driven, the capability shows a desktop instead (the headless shell's
# SwiftShader renderer; navigator.webdriver where a build still sets it). Runs before any page script.
DESKTOP = r"""
(() => {
  try {
    if (navigator.webdriver) {
      Object.defineProperty(Navigator.prototype, 'webdriver', {get: () => false, configurable: true});
    }
  } catch (e) {}
  for (const proto of [window.WebGLRenderingContext, window.WebGL2RenderingContext]) {
    if (!proto) continue;
    const original = proto.prototype.getParameter;
    proto.prototype.getParameter = function (p) {
      const value = original.call(this, p);
      if (typeof value === 'string' && /SwiftShader/i.test(value)) {
        return p === 37445 ? 'Google Inc. (Intel)' : 'ANGLE (Intel, Mesa Intel(R) UHD Graphics 620, OpenGL 4.6)';
      }
      return value;
    };
  }
})();
"""

# A page's WebSocket, checked before its handshake. No CDP domain pauses a WebSocket handshake (`Fetch` does not
# see it, `Network.setBlockedURLs` does not block it), and Playwright's socket route needs a Runtime binding in the
# page's world, which Patchright cannot install there (patchright-python#69). So the constructor asks first: a
# synchronous same-origin request to a path only this browse knows (`__CHECK__`), which the browse's own route
# answers without it ever leaving the browser (`session.BrowserSession._route`), and a socket the policy refuses
# is opened on a name that never resolves (RFC 6761 `.invalid`): it closes as an unreachable server would.
# The same holds for the other constructors that open a connection no request interception sees: WebSocketStream
# (shipped in this Chromium) and WebTransport (HTTP/3 over UDP, on secure pages). The address checked is the one
# the native constructor gets (a string, resolved once: an object whose `toString` answers differently the second
# time cannot swap it), and each prototype's `constructor` names the wrapper, so the native one is not reachable
# through a socket. It fails closed: where the question cannot be asked (a CSP `connect-src` without the page's
# own origin, a frame whose permissions policy forbids sync XHR) the connection is refused. A wrapper the page
# could find (its `toString` is a proxy's). The same script runs in every worker the page starts, before the
# worker's own first line (workers.py).
SOCKET_GUARD = r"""
(() => {
  // Read when a socket is made, not here: a worker held before its first line (workers.py) has no location yet,
  // and reading it then crashes Chromium's renderer.
  const here = () => self.location;
  const allowed = (url) => {
    try {
      // Asked on the page's own origin: a <base href> cannot send the question elsewhere.
      const origin = here().origin && here().origin !== 'null' ? here().origin : '';
      const xhr = new XMLHttpRequest();
      xhr.open('GET', origin + '__CHECK__?u=' + encodeURIComponent(url), false);
      xhr.send();
      return xhr.status === 200 && xhr.responseText === 'ok';
    } catch (e) {
      return false;
    }
  };
  const guard = (name, refused) => {
    const Native = self[name];
    if (typeof Native !== 'function') return;
    const Wrapped = new Proxy(Native, {
      construct(target, args, newTarget) {
        let url;
        try { url = new URL(String(args[0]), here().href).href; } catch (e) { url = null; }
        // No URL: refused as the native constructor refuses one (it is never handed what it would read again).
        if (url === null) throw new DOMException('The URL is invalid.', 'SyntaxError');
        const given = [allowed(url) ? url : refused, ...Array.prototype.slice.call(args, 1)];
        // A subclass's own constructor stays its own; the native one is never handed back as `newTarget`.
        return Reflect.construct(target, given, newTarget === Wrapped ? target : newTarget);
      },
    });
    self[name] = Wrapped;
    // Every socket's prototype names its constructor: without this, `Object.getPrototypeOf(ws).constructor` (or
    // `WebSocket.prototype.constructor`) is the native one, unchecked.
    Object.defineProperty(Native.prototype, 'constructor', {value: Wrapped, writable: true, configurable: true});
  };
  guard('WebSocket', 'ws://refused.invalid/');
  guard('WebSocketStream', 'ws://refused.invalid/');
  guard('WebTransport', 'https://refused.invalid/');
})();
"""

# A shared worker's requests are paused by no interception Chromium offers a client (workers.py): a browse has
# no SharedWorker, in any document (a fresh frame's too), as Chrome on Android never had one. Sites test for it.
NO_SHARED_WORKERS = r"""
(() => { try { delete self.SharedWorker; } catch (e) {} })();
"""
