// The cards a running turn asks a person to act on, drawn the same in web chat and in the Builder's test chat:
// a capability the agent is missing (enable it, or ask an editor to), and a tool call waiting for approval.
import {h, post, errorMessage, csrf, fill} from "./dom.js";

// capability: {id, name, offers}; url: where Enable / Ask posts {reason}; strings: {missing, enable, ask,
// enabled, asked}; outcome: {ok, text} already known (a card drawn again keeps it); onOutcome(outcome): the
// surface keeps the outcome and draws the card again — without it the card shows the outcome itself.
export function capabilityCard({capability, reason, canEnable, url, strings, outcome, onOutcome}) {
  const action = canEnable ? "enable" : "request";
  const button = h("button", {type: "button", class: "button small primary", "data-capability-action": action,
                              text: canEnable ? strings.enable : strings.ask, disabled: outcome && outcome.ok ? "" : null});
  const card = h("section", {class: "capability-card", "data-capability-card": capability.id}, [
    h("p", {text: strings.missing}),
    h("strong", {text: capability.name || capability.id}),
    capability.offers ? h("p", {class: "muted", text: capability.offers}) : null,
    reason ? h("p", {text: reason}) : null,
    button,
    outcome ? outcomeNote(outcome) : null,
  ]);
  button.addEventListener("click", () => {
    button.disabled = true;
    post(url, {reason: reason || ""}, {json: true}).then((res) => {
      const done = {ok: res.ok, text: res.ok ? (res.json.message || strings[canEnable ? "enabled" : "asked"] || "")
                                            : errorMessage(res.json)};
      if (onOutcome) { onOutcome(done); return; }
      card.querySelectorAll("[data-capability-result]").forEach((n) => n.remove());
      card.appendChild(outcomeNote(done));
      if (!done.ok) button.disabled = false;
    });
  });
  return card;
}

function outcomeNote(outcome) {
  return h("p", {class: outcome.ok ? "muted" : "field-error", "data-capability-result": outcome.ok ? "ok" : "error",
                 role: "status", text: outcome.text});
}

// The exact arguments a decision is about, one per name, each as written: a string as its text (run_python's code
// reads as code, its line breaks kept, not as a JSON string full of \n), anything else as indented JSON.
function argumentsView(args) {
  if (args === undefined) return null;
  if (!args || typeof args !== "object" || Array.isArray(args)) {
    return h("pre", {class: "approval-args", text: typeof args === "string" ? args : JSON.stringify(args, null, 2)});
  }
  const list = h("dl", {class: "approval-args"});
  Object.keys(args).sort().forEach((name) => {
    const value = args[name];
    list.appendChild(h("dt", {text: name}));
    list.appendChild(h("dd", {}, [h("pre", {"data-arg": name, text: typeof value === "string" ? value : JSON.stringify(value, null, 2)})]));
  });
  return list;
}

// A call waiting for a person's decision: its tool, its arguments, Approve and Reject. onDecide(decision, card)
// posts the decision (each surface knows its URL and what follows); a person who may not decide sees why not.
export function approvalCard({approvalId, toolName, args, title, canDecide, strings, onDecide, attrs}) {
  const card = h("section", Object.assign({class: "approval-panel", "data-approval": approvalId, "aria-label": title}, attrs || {}), [
    h("h3", {text: title}),
    argumentsView(args),
  ]);
  card.setAttribute("data-tool", toolName || "");
  if (!canDecide) { card.appendChild(h("p", {class: "muted", text: strings.cannot || ""})); return card; }
  const actions = h("div", {class: "actions"});
  [["approve", strings.approve, "button primary"], ["reject", strings.reject, "button danger"]].forEach(([decision, label, cls]) => {
    const b = h("button", {type: "button", class: cls, "data-decision": decision, text: label});
    b.addEventListener("click", () => {
      card.querySelectorAll("button").forEach((other) => { other.disabled = true; });
      onDecide(decision, card);
    });
    actions.appendChild(b);
  });
  card.appendChild(actions);
  return card;
}

// A service to connect (propose_setup's connection card naming a catalog service): its logo and Connect, a form
// POST to the console, which sends the person to the provider's sign-in and back to `back` (this conversation).
// service: {key, name, logo}; strings: {connect} ("Connect %(name)s").
export function connectionCard({service, back, strings}) {
  return h("form", {method: "post", action: "/connections/catalog/" + encodeURIComponent(service.key) + "/connect",
                    class: "connection-card", "data-service-connect": service.key}, [
    h("img", {src: service.logo, alt: "", width: "32", height: "32", class: "service-logo"}),
    h("input", {type: "hidden", name: "csrfmiddlewaretoken", value: csrf()}),
    h("input", {type: "hidden", name: "next", value: back}),
    h("button", {type: "submit", class: "button primary", text: fill(strings.connect, {name: service.name})}),
  ]);
}
