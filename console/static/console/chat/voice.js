// The composer's microphone: press to record (MediaRecorder), press again to stop; the recording goes to
// POST /api/v1/transcriptions — the channel bots' transcription call, on the organization's speech-to-text
// profile, metered for the agent on screen — and the text lands in the message box for the person to read and
// edit. Nothing is sent to the agent until they press Send. A refusal (no microphone permission, no profile set
// up, a used-up budget, the service's failure) is said under the composer in words, and the box keeps its text.
import {h, fill, post, errorMessage} from "../dom.js";
import {S, T, els} from "./state.js";

const TRANSCRIPTIONS_URL = "/api/v1/transcriptions";
const MIC_ICON = '<svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" fill="none" stroke="currentColor" ' +
  'stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><rect x="9" y="3" width="6" height="11" rx="3"/>' +
  '<path d="M5 11a7 7 0 0 0 14 0M12 18v3"/></svg>';

let button = null;
let statusEl = null;
let recorder = null;
let chunks = [];

function say(text, isError) {
  statusEl.textContent = text || "";
  statusEl.classList.toggle("field-error", !!isError);
  statusEl.setAttribute("role", isError ? "alert" : "status");
}

function setRecording(on) {
  button.classList.toggle("recording", on);
  button.setAttribute("aria-pressed", on ? "true" : "false");
  button.setAttribute("aria-label", on ? T.voice_stop : T.voice_record);
  button.title = on ? T.voice_stop : T.voice_record;
  if (on) say(T.voice_recording);
}

function extension(mime) {
  const sub = (mime || "").split(";")[0].split("/")[1] || "webm";
  return sub === "mpeg" ? "mp3" : sub;
}

// The text goes after what is already typed (a person may say half and type half), the caret at its end.
function putInComposer(text) {
  const box = els.textarea;
  box.value = box.value.trim() ? box.value.replace(/\s*$/, " ") + text : text;
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
  box.dispatchEvent(new Event("input", {bubbles: true}));
}

function transcribe(blob) {
  if (!blob.size) { say(T.voice_empty, true); return; }
  say(T.voice_transcribing);
  button.disabled = true;
  const body = new FormData();
  body.append("agent_id", S.agent_id);
  body.append("file", blob, "recording." + extension(blob.type));
  post(TRANSCRIPTIONS_URL, body)
    .then(function ({ok, json}) {
      if (ok) { putInComposer(json.text || ""); say(T.voice_done); }
      else say(fill(T.voice_failed, {message: errorMessage(json) || T.disconnected}), true);
    }, function () { say(fill(T.voice_failed, {message: T.disconnected}), true); })
    .then(function () { button.disabled = false; });
}

function start() {
  if (!S.agent_id) { say(T.choose_agent, true); return; }
  navigator.mediaDevices.getUserMedia({audio: true}).then(function (stream) {
    chunks = [];
    recorder = new MediaRecorder(stream);
    recorder.addEventListener("dataavailable", function (event) { if (event.data && event.data.size) chunks.push(event.data); });
    recorder.addEventListener("stop", function () {
      stream.getTracks().forEach(function (track) { track.stop(); });  // the browser's recording light goes off
      setRecording(false);
      transcribe(new Blob(chunks, {type: recorder.mimeType || "audio/webm"}));
      recorder = null;
    });
    recorder.start();
    setRecording(true);
  }, function (error) {
    const name = error && error.name;
    say(name === "NotAllowedError" || name === "SecurityError" ? T.voice_denied
      : name === "NotFoundError" || name === "OverconstrainedError" ? T.voice_no_device
      : fill(T.voice_failed, {message: (error && error.message) || name || ""}), true);
  });
}

export function setupVoice() {
  // The Builder's test chat runs a draft (no production version to meter); a browser without recording offers none.
  if (!els.composer || S.test_chat || S.environment) return;
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia || !window.MediaRecorder) return;
  button = h("button", {type: "button", class: "button mic", "data-mic": "", "aria-pressed": "false",
                        "aria-label": T.voice_record, title: T.voice_record, html: MIC_ICON});
  statusEl = h("p", {class: "voice-status", role: "status", "data-voice-status": ""});
  button.addEventListener("click", function () {
    if (recorder && recorder.state === "recording") recorder.stop(); else start();
  });
  const controls = els.composer.querySelector(".composer-controls") || els.composer;
  const send = controls.querySelector("[data-send]");
  controls.insertBefore(button, send);
  els.composer.appendChild(statusEl);
}
