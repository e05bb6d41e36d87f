// A part of a page that follows a running job (an evaluation's results): an element with data-refresh-url is
// replaced, every data-refresh-every seconds, by the fragment the server answers for it — until the answer no
// longer asks to be refreshed (a finished run). A dozen lines instead of htmx for the one place that polled.
const FRAGMENT_HEADER = {"X-Fragment": "true"};

function follow(el) {
  const every = Number(el.getAttribute("data-refresh-every") || 2) * 1000;
  setTimeout(() => {
    fetch(el.getAttribute("data-refresh-url"), {credentials: "same-origin", headers: FRAGMENT_HEADER})
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
      .then((html) => {
        const box = document.createElement("template");
        box.innerHTML = html.trim();
        const next = box.content.firstElementChild;
        if (!next) return;
        el.replaceWith(next);
        document.dispatchEvent(new CustomEvent("agenticos:refreshed", {detail: {el: next}}));
        if (next.hasAttribute("data-refresh-url")) follow(next);
      })
      .catch(() => follow(el));  // a failed read (a restart, a blip) tries again
  }, every);
}

document.querySelectorAll("[data-refresh-url]").forEach(follow);
