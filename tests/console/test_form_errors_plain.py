"""Internals stay out of forms (issue 44 §8): a refused form says what to fix in a person's words — never an
internal field path ("api_base_url: …", "capabilities.0.id: …") — and each message once."""

from __future__ import annotations

import re

import pytest

from channelbots.models import ChannelBot
from console.templatetags.form_errors import error_lines, yaml_place
from tests import factories

pytestmark = pytest.mark.django_db


def notice_lines(html: str) -> list[str]:
    """The lines of the page's error notice, as text."""
    notice = re.search(r"<div [^>]*data-form-errors>(.*?)</div>", html, re.S)
    assert notice is not None, "no error notice"
    return [re.sub(r"<[^>]+>", "", li).strip() for li in re.findall(r"<li[^>]*>(.*?)</li>", notice.group(1), re.S)]


def test_a_refused_bot_says_which_field_in_its_label_not_its_name(client_as, org, builder):
    response = client_as(builder, org).post("/channels/", {
        "name": "Support", "transport": "webhook", "mode": "open", "rate_limit_rpm": "10",
        "platform": "mattermost", "token": "mattermost-bot-token-123456"})
    assert response.status_code == 422 and ChannelBot.objects.count() == 0
    html = response.content.decode()
    lines = notice_lines(html)
    assert lines and all(not re.match(r"^[a-z_.0-9]+:", line) for line in lines), lines
    assert any(line.startswith("Server address: ") for line in lines), lines
    assert "<code>api_base_url</code>" not in html
    for line in lines:
        assert html.count(line) == 1, line  # once: not again at a field


def test_the_yaml_import_names_the_place_in_the_file_in_words(client_as, org, builder):
    bad = client_as(builder, org).post("/agents/import", {
        "yaml": "spec:\n  name: X\n  capabilities:\n    - enabled: true\n"})
    assert bad.status_code == 422
    html = bad.content.decode()
    errors = re.findall(r'<p class="field-error" role="alert" data-error-field="[^"]*">(.*?)</p>', html, re.S)
    assert errors and not any("capabilities.0" in e for e in errors), errors
    assert errors == ["In the YAML at capabilities, item 1, id: This is required."], errors


def test_error_lines_never_show_a_path_and_leave_out_what_is_at_its_field():
    lines = error_lines({"auth.header_name": "Field required", "parameters.0.name": "Bad name.",
                         "webhook": "Telegram refused.", "parameters.1.name": "Bad name."}, "webhook")
    assert lines == [("auth.header_name", "Authentication: This is required."),
                     ("parameters.0.name", "Parameters: Bad name.")]
    assert error_lines({"x.y.z": "A sentence."}) == [("x.y.z", "A sentence.")]  # unknown field: the message alone
    assert yaml_place("spec.capabilities.0.config.timeout_secs") == "capabilities, item 1, config, timeout_secs"
    assert yaml_place("capabilities[0].id") == "capabilities, item 1, id"


def test_the_tool_builder_shows_a_refused_model_once_at_its_picker(client_as, org, builder):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership
    from capabilities.custom_tools import services as tool_services

    actor = actor_for_membership(Membership.objects.get(user=builder, organization=org))
    session = tool_services.create_session(actor=actor, title="CRM tools")
    embedding = factories.model_profile(org, "openai", "text-embedding-3-small", kind="embedding",
                                        api_key="sk-emb-0000")
    response = client_as(builder, org).post(f"/tools/ai/{session.pk}/say",
                                            {"prompt": "Build", "model_profile_id": str(embedding.pk)})
    html = response.content.decode()
    assert response.status_code == 422
    assert html.count("Choose one of the organization&#x27;s chat models.") == 1
    assert 'data-field-error="model_profile_id"' in html and "data-form-errors" not in html


def test_bind_a_bot_points_to_the_channels_page_not_the_api(client_as, org, owner, agent):
    html = client_as(owner, org).get(f"/agents/{agent.pk}/").content.decode()
    assert 'href="/channels/" data-channels-link>Add a bot on the Channels page</a>' in html
    assert "/api/v1/bots" not in html
