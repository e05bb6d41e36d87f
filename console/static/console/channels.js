// The Channels pages: the add-a-bot form shows the fields of the chosen platform and transport; a binding's
// extra prompt takes a placeholder or the platform's starter text at the cursor.
function syncBotForm(form) {
  const platform = form.querySelector("[data-platform]");
  function sync() {
    const chosen = platform.value;
    const transport = (form.querySelector("input[name=transport]:checked") || {}).value;
    document.querySelectorAll("[data-for]").forEach((el) => {
      const forPlatform = el.getAttribute("data-for").split(" ").includes(chosen);
      const forTransport = el.getAttribute("data-transport-for");
      el.hidden = !forPlatform || (forTransport && forTransport !== transport);
    });
  }
  platform.addEventListener("change", sync);
  form.querySelectorAll("input[name=transport]").forEach((el) => el.addEventListener("change", sync));
  sync();
}

function insertAtCursor(box, text) {
  const start = box.selectionStart ?? box.value.length, end = box.selectionEnd ?? box.value.length;
  box.value = box.value.slice(0, start) + text + box.value.slice(end);
  box.focus();
  box.selectionStart = box.selectionEnd = start + text.length;
}

function setUpExtraPrompt(box) {
  document.querySelectorAll("[data-insert]").forEach((b) => b.addEventListener("click", () => insertAtCursor(box, b.getAttribute("data-insert"))));
  const starter = document.querySelector("[data-use-starter]");
  // A <template>'s content is inert markup: its text is the starter, as the server wrote it.
  if (starter) starter.addEventListener("click", () => insertAtCursor(box, document.getElementById("starter-text").content.textContent));
}

const botForm = document.querySelector("[data-add-bot]");
if (botForm) syncBotForm(botForm);
const extraPrompt = document.querySelector("[data-extra-prompt]");
if (extraPrompt) setUpExtraPrompt(extraPrompt);
