// Tools and Connections screens: the URL's path parameters highlighted as you type, one more parameter row,
// the auth fields of the chosen family only, and the AI builder page refreshing while a turn runs.
(function () {
  "use strict";

  function highlight(url, target) {
    target.textContent = "";
    var re = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g, last = 0, m;
    while ((m = re.exec(url)) !== null) {
      target.appendChild(document.createTextNode(url.slice(last, m.index)));
      var mark = document.createElement("mark");
      mark.dataset.pathParam = m[1];
      mark.textContent = m[0];
      target.appendChild(mark);
      last = m.index + m[0].length;
    }
    target.appendChild(document.createTextNode(url.slice(last)));
  }

  function addParamRow(table) {
    var rows = table.querySelectorAll("tbody tr");
    var template = rows[rows.length - 1];
    var next = rows.length;
    var row = template.cloneNode(true);
    row.dataset.paramRow = String(next);
    row.querySelectorAll("input, select").forEach(function (el) {
      el.name = el.name.replace(/^p-\d+-/, "p-" + next + "-");
      if (el.type === "checkbox") { el.checked = false; } else if (el.tagName === "INPUT") { el.value = ""; }
    });
    table.querySelector("tbody").appendChild(row);
  }

  function showAuthFields(select) {
    document.querySelectorAll("[data-auth-for]").forEach(function (box) {
      var families = box.dataset.authFor.split(" ");
      box.hidden = families.indexOf(select.value) === -1;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var url = document.querySelector("[data-url-input]");
    var preview = document.querySelector("[data-url-preview]");
    if (url && preview) {
      url.addEventListener("input", function () { highlight(url.value, preview); });
    }
    var add = document.querySelector("[data-add-param]");
    var table = document.querySelector("[data-params]");
    if (add && table) {
      add.addEventListener("click", function () { addParamRow(table); });
    }
    var family = document.querySelector("[data-auth-family]");
    if (family) {
      showAuthFields(family);
      family.addEventListener("change", function () { showAuthFields(family); });
    }
    var transcript = document.querySelector("[data-transcript][data-busy]");
    if (transcript) {
      window.setTimeout(function () { window.location.reload(); }, 2500);
    }
  });
})();
