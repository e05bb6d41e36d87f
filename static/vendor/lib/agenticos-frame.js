/* Runs first inside every visual's sandboxed frame (an opaque origin, connect-src 'none'). It reports to the
   console what went wrong while the drawing ran — script errors, failed loads, refused requests — and offers
   agenticos.followUp(text), which the console only shows: the person's click sends it. */
(function () {
  "use strict";
  var errors = [];
  var done = false;
  function post(msg) { try { parent.postMessage(msg, "*"); } catch (e) { /* nothing else to tell */ } }
  function note(text) { if (!done && errors.length < 20) errors.push(String(text).slice(0, 500)); }
  window.addEventListener("error", function (ev) {
    if (ev.target && ev.target !== window && (ev.target.src || ev.target.href)) {
      note("failed to load " + (ev.target.src || ev.target.href));
    } else {
      note((ev.message || "script error") + (ev.lineno ? " (line " + ev.lineno + ")" : ""));
    }
  }, true);
  window.addEventListener("unhandledrejection", function (ev) {
    var r = ev.reason;
    note("unhandled rejection: " + (r && r.message ? r.message : String(r)));
  });
  document.addEventListener("securitypolicyviolation", function (ev) {
    note("refused by the sandbox: " + ev.effectiveDirective + " " + (ev.blockedURI || ""));
  });
  window.agenticos = {
    followUp: function (text) { post({agenticos: "follow_up", text: String(text || "").slice(0, 500)}); }
  };
  function height() { return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0); }
  function finish() {
    if (done) return;
    done = true;
    post({agenticos: "report", errors: errors, height: height()});
  }
  window.addEventListener("load", function () {
    post({agenticos: "height", height: height()});
    // Let the drawing's own load handlers and promises settle before reporting.
    setTimeout(finish, 1200);
  });
})();
