// Small behaviours shared by every console page. No framework; htmx handles partial updates.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el.matches && el.matches("select[data-autosubmit]")) el.form.requestSubmit();
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.value !== undefined ? source.value : source.textContent;
    if (navigator.clipboard) {
      navigator.clipboard.writeText(text).then(function () {
        button.setAttribute("data-copied", "true");
        setTimeout(function () { button.removeAttribute("data-copied"); }, 1500);
      });
    }
  });
})();
