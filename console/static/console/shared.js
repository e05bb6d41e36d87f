// A shared conversation (agents.sharing): its text turns, drawn read-only by the one turn renderer (turn.js).
const node = document.getElementById("shared-state");
const container = document.querySelector("[data-shared] [data-transcript]");
if (node && container) {
  const state = JSON.parse(node.textContent);
  const draw = function () {
    const renderer = window.AgenticTurn.create({strings: state.strings, openSteps: {}, onChange: function () {}});
    renderer.render(container, state.turns);
  };
  // The classic scripts are deferred: they have run by DOMContentLoaded, which a module may precede.
  if (window.AgenticTurn) draw(); else document.addEventListener("DOMContentLoaded", draw);
}
