// Passkeys (WebAuthn): the server's options (fido2's JSON form, through allauth's MFA) go to the browser's
// authenticator, and its answer goes back in the form's hidden `credential` field. Used on Settings → Two-factor
// (create) and on the sign-in's second step (get).
import { csrf } from "./dom.js";

// A refusal the server explains (too many attempts): its message is shown instead of the generic one.
class Refused extends Error {}

async function options(form) {
  const answer = await fetch(form.getAttribute("data-passkey-options"), {
    method: "POST", credentials: "same-origin", headers: {"X-CSRFToken": csrf(form)}});
  if (!answer.ok) {
    const body = await answer.json().catch(() => null);
    if (answer.status === 429 && body?.error?.message) throw new Refused(body.error.message);
    throw new Error("no options");
  }
  return answer.json();
}

async function ceremony(form) {
  const data = await options(form);
  let credential;
  if (form.hasAttribute("data-passkey-create")) {
    credential = await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(data.publicKey)});
  } else {
    credential = await navigator.credentials.get({
      publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(data.publicKey)});
  }
  form.querySelector("input[name=credential]").value = JSON.stringify(credential.toJSON());
  form.submit();
}

for (const form of document.querySelectorAll("form[data-passkey-options]")) {
  form.addEventListener("submit", (event) => {
    if (form.querySelector("input[name=credential]").value) return;
    event.preventDefault();
    const status = form.querySelector("[data-passkey-status]");
    ceremony(form).catch((error) => {
      if (status) status.textContent = error instanceof Refused ? error.message : status.getAttribute("data-failed");
    });
  });
}
