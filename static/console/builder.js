// Toolbox search: filters capability cards; searching opens the Advanced group so matches there show.
(function () {
  "use strict";
  var input = document.querySelector("[data-toolbox-search]");
  if (!input) return;
  var group = document.querySelector("[data-advanced-group]");
  var wasOpen = group ? group.open : false;
  input.addEventListener("input", function () {
    var q = input.value.trim().toLowerCase();
    document.querySelectorAll("[data-capability]").forEach(function (card) {
      card.hidden = !!q && card.getAttribute("data-search").indexOf(q) < 0;
    });
    if (group) group.open = q ? true : wasOpen;
  });
  if (group) group.addEventListener("toggle", function () { if (!input.value) wasOpen = group.open; });
})();

// Switching a capability on opens its settings, so what it needs is in view.
document.addEventListener("change", function (event) {
  var box = event.target;
  if (!box.matches || !box.matches("[data-capability] header input[type=checkbox]")) return;
  var settings = box.closest("[data-capability]").querySelector(".cap-settings");
  if (settings && box.checked) settings.open = true;
});
