// An embed's edit page: variable rows added and removed (renumbered for the form), the accent colour's picker
// and text kept together, and the preview frame following the form as it is typed, before anything is saved.
function setUpVariables(form) {
  const rows = form.querySelector("[data-variable-rows]");
  const max = Number(form.getAttribute("data-max-variables"));
  function renumber() {
    rows.querySelectorAll("[data-variable-row]").forEach((row, i) => {
      row.querySelectorAll("input").forEach((input) => {
        const part = input.getAttribute("data-name") || input.name.replace(/^variables-\d+-/, "");
        input.setAttribute("data-name", part);
        input.name = "variables-" + i + "-" + part;
      });
    });
  }
  form.querySelector("[data-add-variable]").addEventListener("click", () => {
    if (rows.querySelectorAll("[data-variable-row]").length >= max) return;
    rows.appendChild(document.getElementById("variable-row-template").content.cloneNode(true));
    renumber();
    rows.lastElementChild.querySelector("input").focus();
  });
  rows.addEventListener("click", (event) => {
    const button = event.target.closest("[data-remove-variable]");
    if (!button) return;
    button.closest("[data-variable-row]").remove();
    renumber();
  });
}

function setUpPreview(form) {
  const frame = document.querySelector("[data-embed-preview]");
  let timer = null;
  function refresh() {
    if (!frame) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const params = new URLSearchParams();
      form.querySelectorAll("[data-preview-field]").forEach((el) => {
        if (el.type === "checkbox") params.set(el.name, el.checked ? "1" : "0");
        else params.set(el.name, el.value);
      });
      frame.src = frame.getAttribute("data-preview-src") + "?" + params.toString();
    }, 300);
  }
  form.querySelectorAll("[data-preview-field]").forEach((el) => {
    el.addEventListener(el.type === "checkbox" || el.tagName === "SELECT" ? "change" : "input", refresh);
  });
  const picker = form.querySelector("[data-accent-picker]"), accent = document.getElementById("f-accent");
  picker.addEventListener("input", () => { accent.value = picker.value; refresh(); });
  accent.addEventListener("input", () => { if (/^#[0-9a-fA-F]{6}$/.test(accent.value)) picker.value = accent.value.toLowerCase(); });
}

const form = document.querySelector("[data-embed-edit]");
if (form) {
  setUpVariables(form);
  setUpPreview(form);
}
