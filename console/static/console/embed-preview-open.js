// The widget preview (an iframe of an embed's edit page): open the panel once the widget mounts, so its header,
// greeting and input show without a click.
let tries = 0;
(function open() {
  const host = document.querySelector("[data-agenticos-widget]");
  const root = host && (host.shadowRoot || host);
  const launcher = root && root.querySelector("button");
  if (launcher) { launcher.click(); return; }
  if (++tries < 50) setTimeout(open, 50);
})();
