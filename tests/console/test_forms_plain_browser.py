"""Internals stay out of the forms (issue 44 §8), checked as a person sees them, in Debian's chromium against
daphne at 1440 and 390 px: on the Builder (every card's settings opened), Triggers, Knowledge, Models, Settings
and Channels, no label, option, help or error shows a field path, an option's raw value or a library's name;
the Builder's key pickers list only secrets of the kind their field takes (never a JWT or bot secret); a refused
form says its error once, at its label; the Slack form speaks of no Telegram thing and the reverse; the Voice
card's picker offers the organization's realtime models only and saves the choice — with no console error."""

from __future__ import annotations

import re

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents.models import Agent, ModelProfile
from channelbots import services as bots
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What a form's words are made of: labels, legends, summaries, options, help, errors, headings, buttons. Code a
# person copies (a manifest, a scope) sits in <code>/<pre> and is left out on purpose.
FORM_WORDS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const skip = el => el.closest('code, pre, kbd, template, script, [translate=no], [hidden][data-for], [data-private-hosts]');
  // [data-private-hosts]: the operator's setting, shown on purpose to those who see deployment settings.
  const found = [];
  const picked = 'label, legend, summary, option, .help, .field-error, [data-field-error], h2, h3, button, th, .muted';
  document.querySelectorAll('main ' + picked.split(', ').join(', main ')).forEach(el => {
    if (skip(el)) return;
    let text = '';
    el.childNodes.forEach(n => { if (n.nodeType === 3) text += n.textContent; else if (!skip(n) && n.tagName !== 'SELECT' && n.tagName !== 'TEXTAREA') text += n.innerText || ''; });
    text = text.trim();
    if (text) found.push([el.tagName.toLowerCase() + (el.value !== undefined && el.tagName === 'OPTION' ? '=' + el.value : ''), text]);
  });
  return found;
}"""
JARGON = [
    re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b"),  # a field name or an option's value: multi_query, cdp_url
    re.compile(r"\b(config|spec|capabilities)\s*[.\[]"),  # a field path
    re.compile(r"pydantic|model class|capability ids|json schema", re.I),
    re.compile(r"\bNone\.|\bTrue\b|\bFalse\b|\bnull\b"),  # Python's or JSON's words for a value
    re.compile(r"\b[A-Z]+_[A-Z_]+\b"),  # an operator's setting (BROWSER_ALLOWED_PRIVATE_HOSTS): not a member's
]
# An option showing its value ("hyde", "head_tail"); an id with digits or dashes (a model, a region) is a name.
RAW_VALUE = re.compile(r"^[a-z]+(_[a-z]+)*$")
ENVIRONMENTS = {"production", "dev", "draft", "staging"}  # an environment's name is what people call it


def jargon(found: list[list[str]]) -> list[str]:
    bad = [f"{where}: {text}" for where, text in found if any(p.search(text) for p in JARGON)
           and not (where.startswith("option=") and re.search(r"\d", where))]  # a model's id: its name
    return bad + [f"{where}: shows its value" for where, text in found
                  if where.startswith("option=") and where[len("option="):] == text and RAW_VALUE.match(text)
                  and text not in ENVIRONMENTS]


TELEGRAM_WORDS = re.compile(r"telegram|botfather|bot api|123456:|long polling", re.I)
SLACK_WORDS = re.compile(r"slack|xoxb|xapp|socket mode|events api|signing secret|manifest", re.I)


# What the add form says once a platform is chosen (rendered text, so what is hidden is not read), the platform
# picker itself aside: it names every platform on purpose.
SAID_BESIDES_PLATFORM = """form => {
  const picker = form.querySelector('[data-platform]').closest('.field');
  picker.style.display = 'none';
  const said = form.innerText;
  picker.style.display = '';
  return said;
}"""


def pages(agent, collection, embedding) -> tuple[str, ...]:
    return (f"/agents/{agent.pk}/", f"/agents/{agent.pk}/triggers/", "/knowledge/", f"/knowledge/{collection.pk}/",
            "/settings/models/", f"/settings/models/{embedding.pk}/", "/settings/", "/settings/secrets/",
            "/settings/budget/", "/settings/retention/", "/settings/chat/", "/channels/")


@pytest.mark.parametrize("width", [1440, 390])
def test_every_form_speaks_a_builders_words_and_pickers_offer_only_what_fits(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email=f"fp-{width}@example.com", password=PASSWORD)
    agent = factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}])
    embedding = factories.model_profile(org, "openai", "text-embedding-3-small", label="Embeddings",
                                        kind="embedding", api_key="sk-emb")
    factories.model_profile(org, "openai", "gpt-4o", label="Chatty", api_key="sk-chat")
    voice = factories.model_profile(org, "openai", "gpt-realtime", label="Voice desk", api_key="sk-v",
                                    kind=ModelProfile.Kind.REALTIME)
    collection = factories.collection(org, "Handbook", embedding_profile=embedding)
    factories.secret(org, name="Search key", value="tvly-0000")  # an API key: what every key picker takes
    for name, kind in (("Embed signing", "jwt_secret"), ("Support bot", "bot_token"), ("Warehouse", "database_dsn")):
        factories.secret(org, name=name, value=f"{kind}-value-0000", kind=kind)
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    slack = bots.create_bot(actor=actor, data={"platform": "slack", "name": "Slacky", "transport": "webhook",
                                               "token": "xoxb-test-0001", "signing_secret": "abcdefghijk12345"})
    telegram = bots.create_bot(actor=actor, data={"platform": "telegram", "name": "Teley", "transport": "webhook",
                                                  "token": "123456:ABCDEF-telegram"})
    base = live_server_url

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, owner.email)

    # ---- no field path, raw option value, library name or operator setting in any form's words
    for path in pages(agent, collection, embedding):
        page.goto(base + path)
        assert jargon(page.evaluate(FORM_WORDS)) == [], path
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), path

    # ---- the Builder's key pickers list API keys only: never a JWT secret, a bot token or a database DSN
    page.goto(f"{base}/agents/{agent.pk}/")
    pickers = page.locator("select[name=secret_id]")
    assert pickers.count() >= 5
    for i in range(pickers.count()):
        offered = pickers.nth(i).locator("option").all_inner_texts()
        assert offered[0] == "No key" and all(o.startswith(("Search key", "secret-")) for o in offered[1:]), offered
        assert not any(n in " ".join(offered) for n in ("Embed signing", "Support bot", "Warehouse"))

    # ---- web search: the card says its default needs no key; a paid service without one is said once, at the key
    page.locator("[data-toolbox-open=web_research]").click()
    card = page.locator("#cap-web_research")
    assert "DuckDuckGo, the default, needs no key" in card.locator("[data-key-needs]").inner_text()
    page.locator("[data-toolbox-toggle=web_research]").check()
    settings_fold = card.locator("details.cap-settings")
    if settings_fold.get_attribute("open") is None:
        settings_fold.locator("> summary").click()
    card.get_by_label("Service").select_option(label="Tavily")
    card.get_by_label("Key from the vault").select_option(label="No key")
    page.get_by_role("button", name="Save the Toolbox").click()
    problem = card.locator("[data-field-error]")
    problem.first.wait_for()
    assert problem.count() == 1
    message = problem.inner_text()
    assert page.locator("main").inner_text().count(message) == 1, message
    assert jargon([["field-error", message]]) == [] and "api_key" not in message, message
    key_field = card.get_by_label("Key from the vault").locator("xpath=ancestor::div[contains(@class,'field')][1]")
    assert key_field.locator("[data-field-error]").count() == 1  # at its label, not in a list above the form
    card.screenshot(path=str(ARTIFACTS / f"forms-web-search-key-{width}.png"))

    # ---- the Voice card: realtime models only, the choice saved into the draft
    page.goto(f"{base}/agents/{agent.pk}/#voice")
    picker = page.get_by_label("Voice model for calls")
    offered = picker.locator("option").all_inner_texts()
    assert offered == ["The organization's first: Voice desk", "Voice desk (gpt-realtime)"], offered
    picker.select_option(label="Voice desk (gpt-realtime)")
    page.get_by_role("button", name="Save the voice model").click()
    page.get_by_text("Voice model saved in the draft.").wait_for()
    assert Agent.objects.get(pk=agent.pk).draft_spec["realtime_profile_id"] == str(voice.pk)
    assert page.get_by_label("Voice model for calls").input_value() == str(voice.pk)
    page.locator("#voice").screenshot(path=str(ARTIFACTS / f"builder-voice-model-{width}.png"))

    # ---- each platform's form speaks of its own things only
    page.goto(f"{base}/channels/")
    form = page.locator("form[data-add-bot]")
    form.get_by_label("Platform").select_option("slack")
    said = form.evaluate(SAID_BESIDES_PLATFORM)
    assert TELEGRAM_WORDS.findall(said) == [] and "xoxb" in said, said
    form.get_by_label("Platform").select_option("telegram")
    said = form.evaluate(SAID_BESIDES_PLATFORM)
    assert SLACK_WORDS.findall(said) == [] and "BotFather" in said, said
    form.screenshot(path=str(ARTIFACTS / f"channels-add-telegram-{width}.png"))
    for bot, foreign in ((slack, TELEGRAM_WORDS), (telegram, SLACK_WORDS)):
        page.goto(f"{base}/channels/{bot.pk}/")
        said = page.locator("main").inner_text().replace(bot.name, "")
        assert foreign.findall(said) == [], (bot.platform, foreign.findall(said))
    assert errors == [] or all("422" in e for e in errors)  # the refused Toolbox save answers 422, nothing else
