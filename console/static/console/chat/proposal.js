// An agent the Architect proposed (propose_setup's agent card with a setup, capabilities/architect): what it
// would be — model, capabilities, knowledge, budget, where it answers, the schedule it runs on (created with the
// draft, starting once it is published) — with its name and instructions editable,
// and "Create the draft", which asks the server to check the setup again and create a draft (agents/architect.py,
// POST /api/v1/runs/<run>/proposals/<call>/accept). Nothing is published: the draft opens in the Builder.
import {h, fill, csrf, post, errorMessage} from "../dom.js";
import {T} from "./state.js";

function row(label, value) {
  return value ? h("div", {class: "proposal-row"}, [h("dt", {text: label}), h("dd", {text: value})]) : null;
}

function builderLink(agentId) {
  return h("a", {class: "button", href: "/agents/" + agentId + "/", "data-proposal-open": "", text: T.proposal_open});
}

// What a person typed into a card, and the draft it made, by card (its run, call and index): a redraw of the turn
// (the run's end draws the transcript again) builds the card anew and must not drop them.
const kept = new Map();
function keptFor(uid) {
  if (!kept.has(uid)) kept.set(uid, {});
  return kept.get(uid);
}

export function proposalCard(c) {
  const s = c.setup;
  const uid = "proposal-" + c._from.call + "-" + c._from.index;
  const state = keptFor(c._from.run + "/" + uid);
  const box = h("div", {class: "proposal", "data-proposal": ""});
  const names = (s.collection_names || []).filter(Boolean);
  box.appendChild(h("dl", {class: "proposal-facts"}, [
    row(T.proposal_model, s.model_label),
    row(T.proposal_capabilities, (s.capability_names || []).join(", ")),
    row(T.proposal_knowledge, names.join(", ")),
    row(T.proposal_upload, (s.knowledge_to_upload || []).join(", ")),
    row(T.proposal_budget, s.monthly_budget_usd ? "$" + s.monthly_budget_usd : ""),
    row(T.proposal_where, s.where),
    row(T.proposal_trigger, s.trigger_words),
  ]));
  const accepted = c.accepted_agent_id || state.agentId;
  if (accepted) { box.appendChild(builderLink(accepted)); return box; }
  const name = h("input", {id: uid + "-name", name: "name", value: state.name ?? s.name, maxlength: "200",
                           "data-proposal-name": ""});
  const instructions = h("textarea", {id: uid + "-instructions", name: "instructions", rows: "5", "data-proposal-instructions": ""});
  instructions.value = state.instructions ?? s.instructions;
  name.addEventListener("input", function () { state.name = name.value; });
  instructions.addEventListener("input", function () { state.instructions = instructions.value; });
  const status = h("p", {class: "muted", role: "status", "data-proposal-status": ""});
  const accept = h("button", {type: "button", class: "button primary", "data-proposal-accept": "", text: T.proposal_accept});
  accept.addEventListener("click", function () {
    accept.disabled = true;
    const url = "/api/v1/runs/" + c._from.run + "/proposals/" + encodeURIComponent(c._from.call) + "/accept";
    post(url, {card: c._from.index, name: name.value, instructions: instructions.value}, {json: true}).then(function (r) {
      if (!r.ok) {
        accept.disabled = false;
        status.textContent = fill(T.proposal_failed, {message: errorMessage(r.json) || r.status});
        return;
      }
      state.agentId = r.json.agent_id;  // a redraw of this turn shows the link, not the form
      // A draft kept without its schedule says why (the server's sentence), instead of the plain "created".
      status.textContent = r.json.trigger_refused || T.proposal_created;
      accept.replaceWith(builderLink(r.json.agent_id));
    });
  });
  box.append(
    h("label", {for: uid + "-name", text: T.proposal_name}), name,
    h("label", {for: uid + "-instructions", text: T.proposal_instructions}), instructions,
    accept, status);
  return box;
}

// An agent card without a setup is "a question to the Architect" (spec propose_setup): a console POST that opens
// web chat on the organization's Architect with the card's idea as the first words (console/architect.py).
export function askArchitect(c) {
  return h("form", {method: "post", action: "/architect/ask/", "data-ask-architect": ""}, [
    h("input", {type: "hidden", name: "csrfmiddlewaretoken", value: csrf()}),
    h("input", {type: "hidden", name: "title", value: c.title}),
    h("input", {type: "hidden", name: "detail", value: c.detail || ""}),
    h("button", {type: "submit", class: "button", text: T.setup_open_agent}),
  ]);
}
