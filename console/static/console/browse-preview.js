// The chat's preview of a browse (the browser binding's `preview`): while a browse runs, a small picture of the
// page it has open, updating with each frame, under its step; a click opens the live view. Self-contained:
// it finds a running step's "Watch the browser" link (turn.js draws it for members, on web chat only) and opens
// that browse's view socket in preview mode, which the server refuses to anyone who may not watch the live view
// and to a browse whose `preview` is off — so then nothing is drawn. The picture goes away when the browse ends.
function setUpBrowsePreview() {
  const PATH = /^\/browse\/[0-9a-f-]{36}\/[^/?#]+$/;
  const previews = {};  // live view path -> {box, img, state: "connecting" | "live" | "off" | "ended"}

  function open(path) {
    const box = document.createElement("a");
    box.href = path;
    box.target = "_blank";
    box.rel = "noopener";
    box.className = "browse-preview";
    box.setAttribute("data-browse-preview", path);
    box.hidden = true;
    box.style.display = "block";
    box.style.margin = ".25rem 0 .5rem 1.25rem";
    box.style.maxWidth = "320px";
    const img = document.createElement("img");
    img.alt = (document.querySelector("[data-watch-browser]") || {}).textContent || "";
    img.style.display = "block";
    img.style.width = "100%";
    img.style.height = "auto";
    img.style.border = "1px solid rgba(127, 127, 127, .4)";
    img.style.borderRadius = "4px";
    box.appendChild(img);
    const preview = {box: box, img: img, state: "connecting"};
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + "/ws" + path + "/?preview=1");
    function show(data) {
      if (!data || !data.jpeg || preview.state !== "live") return;
      img.src = "data:image/jpeg;base64," + data.jpeg;
      box.hidden = false;
    }
    function end(state) {
      if (preview.state === "ended" || preview.state === "off") return;
      preview.state = state;
      if (box.parentNode) box.parentNode.removeChild(box);
      mark(path);
      if (socket.readyState === WebSocket.OPEN) socket.close();
    }
    socket.addEventListener("message", function (event) {
      const msg = JSON.parse(event.data), data = msg.data || {};
      if (msg.type === "hello") {
        if (data.ended || !data.live) { end("ended"); return; }
        preview.state = "live";
        mark(path);
        show(data.frame);
      } else if (msg.type === "frame") {
        show(data);
      } else if (msg.type === "ended") {
        end("ended");
      }
    });
    // Refused (preview off, or not one who may watch) before a hello: nothing is drawn.
    socket.addEventListener("close", function () { end(preview.state === "connecting" ? "off" : "ended"); });
    return preview;
  }

  // The link's data-browse-preview says what became of the preview (a redrawn link gets it again).
  function mark(path) {
    const state = previews[path] && previews[path].state;
    document.querySelectorAll("[data-watch-browser]").forEach(function (link) {
      if (link.getAttribute("href") === path && link.getAttribute("data-browse-preview") !== state) {
        link.setAttribute("data-browse-preview", state);
      }
    });
  }

  function attach(link) {
    const path = link.getAttribute("href");
    if (!path || !PATH.test(path)) return;
    const step = link.closest("[data-step]");
    if (!step) return;
    let preview = previews[path];
    if (!preview) {
      // A browse of the turn being written (the agent's own browser tools keep one view open past their first
      // step); a finished turn's browse has nothing to show.
      const turn = step.closest("[data-turn]");
      const live = step.getAttribute("data-status") === "running" || (turn && turn.getAttribute("aria-busy") === "true");
      if (!live) return;
      preview = previews[path] = open(path);
    }
    if (link.getAttribute("data-browse-preview") !== preview.state) link.setAttribute("data-browse-preview", preview.state);
    if (preview.state === "ended" || preview.state === "off") return;
    // Under the step (a step folded away or redrawn by the turn renderer gets the same picture back).
    if (step.nextSibling !== preview.box) step.parentNode.insertBefore(preview.box, step.nextSibling);
  }

  let queued = false;
  function scan() {
    queued = false;
    document.querySelectorAll("[data-step] [data-watch-browser]").forEach(attach);
  }
  function later() {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(scan);
  }

  function start() {
    scan();
    new MutationObserver(later).observe(document.body, {childList: true, subtree: true});
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}

setUpBrowsePreview();
