// Tools and Connections screens: the URL's path parameters highlighted as you type, one more parameter row,
// the auth fields of the chosen family only, and the AI builder page refreshing while a turn runs.
function setUpTools() {

  function highlight(url, target) {
    target.textContent = "";
    const re = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
    let last = 0, m;
    while ((m = re.exec(url)) !== null) {
      target.appendChild(document.createTextNode(url.slice(last, m.index)));
      const mark = document.createElement("mark");
      mark.dataset.pathParam = m[1];
      mark.textContent = m[0];
      target.appendChild(mark);
      last = m.index + m[0].length;
    }
    target.appendChild(document.createTextNode(url.slice(last)));
  }

  function addParamRow(table) {
    const rows = table.querySelectorAll("tbody tr");
    const template = rows[rows.length - 1];
    const next = rows.length;
    const row = template.cloneNode(true);
    row.dataset.paramRow = String(next);
    row.querySelectorAll("input, select").forEach(function (el) {
      el.name = el.name.replace(/^p-\d+-/, "p-" + next + "-");
      if (el.type === "checkbox") { el.checked = false; } else if (el.tagName === "INPUT") { el.value = ""; }
    });
    table.querySelector("tbody").appendChild(row);
  }

  function showAuthFields(select) {
    document.querySelectorAll("[data-auth-for]").forEach(function (box) {
      const families = box.dataset.authFor.split(" ");
      box.hidden = families.indexOf(select.value) === -1;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const url = document.querySelector("[data-url-input]");
    const preview = document.querySelector("[data-url-preview]");
    if (url && preview) {
      url.addEventListener("input", function () { highlight(url.value, preview); });
    }
    const add = document.querySelector("[data-add-param]");
    const table = document.querySelector("[data-params]");
    if (add && table) {
      add.addEventListener("click", function () { addParamRow(table); });
    }
    const family = document.querySelector("[data-auth-family]");
    if (family) {
      showAuthFields(family);
      family.addEventListener("change", function () { showAuthFields(family); });
    }
    const transcript = document.querySelector("[data-transcript][data-busy]");
    if (transcript) {
      window.setTimeout(function () { window.location.reload(); }, 2500);
    }
  });
}

setUpTools();
