// The trigger form: the cron expression read back in words as it is typed (the server's croniter describes it).
function setUpCronPreview(input, out) {
  const url = input.getAttribute("data-describe-url");
  let timer;
  function preview() {
    if (!input.value.trim()) { out.textContent = ""; return; }
    fetch(url + "?cron=" + encodeURIComponent(input.value), {credentials: "same-origin"})
      .then((r) => r.json()).then((d) => { out.textContent = d.text; }).catch(() => {});
  }
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(preview, 250); });
  preview();
}

const cron = document.querySelector("[data-cron-input]");
const cronPreview = document.querySelector("[data-cron-preview]");
if (cron && cronPreview) setUpCronPreview(cron, cronPreview);
