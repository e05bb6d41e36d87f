// The live view of a browse (/browse/{run_id}/{call_id}): frames of the page as it is now, the steps so far, and
// — for the run's person or an editor of the agent — taking the tab: clicks, wheel and keys on the picture go to
// the page (in its own CSS pixels) through the socket; the worker holding the browser dispatches them.
function setUpLiveView() {
  const root = document.getElementById("browse-live");
  if (!root) return;
  const status = root.querySelector("[data-browse-status]");
  const img = root.querySelector("[data-browse-frame]");
  const steps = document.querySelector("[data-browse-steps]");
  const take = root.querySelector("[data-browse-take]");
  const release = root.querySelector("[data-browse-release]");
  const str = (name) => root.dataset["str" + name] || "";
  let size = { width: 0, height: 0 };
  let mine = false;

  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const socket = new WebSocket(scheme + location.host + root.dataset.socket);
  const send = (payload) => { if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(payload)); };

  function say(text) { status.textContent = text; }
  function showFrame(data) {
    if (!data || !data.jpeg) return;
    img.src = "data:image/jpeg;base64," + data.jpeg;
    img.hidden = false;
    size = { width: data.width || img.naturalWidth, height: data.height || img.naturalHeight };
  }
  function addStep(line) {
    const li = document.createElement("li");
    li.textContent = line;
    steps.appendChild(li);
  }
  function showControl(holder, isMine) {
    mine = !!isMine;
    if (take) take.hidden = !!holder;
    if (release) release.hidden = !mine;
    img.classList.toggle("in-control", mine);
    if (mine) say(str("Taken"));
    else if (holder) say(str("Held") + " " + holder);
  }

  function showAgent(data) {
    if (data.state === "paused" && !mine) say(str("Paused"));
    if (data.state === "resumed") say(str("Resumed"));
    if (data.state === "needs_person") say(str("Needs") + " " + (data.reason || ""));
  }

  socket.addEventListener("message", (event) => {
    const msg = JSON.parse(event.data);
    const data = msg.data || {};
    switch (msg.type) {
      case "hello":
        (data.steps || []).forEach(addStep);
        showFrame(data.frame);
        say(data.ended ? str("Ended") : str("Waiting"));
        if (data.control) showControl(data.control.holder, data.control.mine);
        if (data.agent && !data.ended) showAgent(data.agent);
        break;
      case "frame": showFrame(data); if (!mine && status.textContent === str("Waiting")) say(""); break;
      case "step": addStep(data.line); break;
      case "control":
        showControl(data.holder, data.mine);
        if (!data.holder) say("");
        break;
      case "agent": showAgent(data); break;
      case "ended": say(str("Ended")); if (take) take.hidden = true; break;
      case "error": say(data.message || ""); break;
    }
  });
  socket.addEventListener("close", () => { if (take) take.disabled = true; });

  if (take) take.addEventListener("click", () => send({ type: "take" }));
  if (release) release.addEventListener("click", () => send({ type: "release" }));

  function pagePoint(event) {
    const box = img.getBoundingClientRect();
    const width = size.width || img.naturalWidth, height = size.height || img.naturalHeight;
    return { x: (event.clientX - box.left) * width / box.width, y: (event.clientY - box.top) * height / box.height };
  }
  img.addEventListener("click", (event) => {
    if (!mine) return;
    img.focus();
    send({ type: "input", event: { kind: "click", ...pagePoint(event) } });
  });
  img.addEventListener("wheel", (event) => {
    if (!mine) return;
    event.preventDefault();
    send({ type: "input", event: { kind: "scroll", dy: event.deltaY, ...pagePoint(event) } });
  }, { passive: false });
  const KEYS = ["Enter", "Backspace", "Tab", "Escape", "Delete", "ArrowLeft", "ArrowUp", "ArrowRight", "ArrowDown",
    "Home", "End", "PageUp", "PageDown"];
  img.addEventListener("keydown", (event) => {
    if (!mine || event.ctrlKey || event.metaKey || event.altKey) return;
    if (KEYS.includes(event.key)) {
      event.preventDefault();
      send({ type: "input", event: { kind: "key", key: event.key } });
    } else if (event.key.length === 1) {
      event.preventDefault();
      send({ type: "input", event: { kind: "text", text: event.key } });
    }
  });
}

setUpLiveView();
