"""Every response under /api/ is the error envelope, with DEBUG on or off, and input no view can store is
refused at the edge (agenticos/middleware.py) instead of surfacing as a 500."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agents.models import Agent
from tests.channelbots.conftest import SIGNING_SECRET, slack_bot

pytestmark = pytest.mark.django_db


def assert_envelope(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"}
    if code is not None:
        assert error["code"] == code
    return error


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


@pytest.fixture
def owner_client(org, owner, api_as):
    return api_as(owner, org)


# ------------------------------------------------------------------ what Django answers itself


def test_an_unknown_api_route_is_an_envelope_404(debug, owner_client):
    assert_envelope(owner_client.get("/api/v1/no-such-thing"), 404, "not_found")
    assert_envelope(owner_client.post("/api/v1/no-such-thing/", {}), 404, "not_found")


def test_a_path_that_misses_its_converter_is_an_envelope_404(debug, owner_client):
    assert_envelope(owner_client.get("/api/v1/agents/not-a-uuid"), 404, "not_found")
    assert_envelope(owner_client.get("/api/v1/members/not-a-number"), 404, "not_found")


def test_a_post_to_a_route_written_without_its_slash_is_answered_not_redirected(debug, owner_client):
    # APPEND_SLASH once raised a RuntimeError (an HTML 500) for a POST to the slash-only tool routes.
    response = owner_client.post("/api/v1/tools", {"name": "x"}, format="json")
    assert response.status_code < 500 and response["Content-Type"].startswith("application/json")
    assert owner_client.post("/api/v1/bots/", {"platform": "nope"}, format="json")["Content-Type"] == (
        "application/json")


def test_a_method_a_plain_view_refuses_is_an_envelope_405_with_allow(debug, client):
    response = client.get("/api/v1/slack/00000000-0000-0000-0000-000000000000/events")
    assert_envelope(response, 405, "method_not_allowed")
    assert response["Allow"] == "POST"


def test_a_method_a_drf_view_refuses_is_an_envelope_405(owner_client):
    assert_envelope(owner_client.put("/api/v1/me", {}, format="json"), 405, "method_not_allowed")


def test_a_csrf_failure_on_a_session_request_is_an_envelope_403(debug, owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/api/v1/organizations", data=json.dumps({"name": "New"}), content_type="application/json")
    assert_envelope(response, 403, "forbidden")


def test_a_slack_webhook_with_a_bad_signature_is_an_envelope_401(debug, client, org, builder):
    bot = slack_bot(org, builder, signing_secret=SIGNING_SECRET)
    response = client.post(f"/api/v1/slack/{bot.pk}/events", data=b"{}", content_type="application/json",
                           HTTP_X_SLACK_SIGNATURE="v0=bad", HTTP_X_SLACK_REQUEST_TIMESTAMP="1")
    assert_envelope(response, 401, "bad_signature")


def test_an_exception_in_a_plain_api_view_is_an_envelope_500_without_a_trace(debug, client, monkeypatch):
    def explode(key):
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr("embeds.views._page_embed", explode)
    response = client.get("/api/v1/embed/some-key/config")
    assert_envelope(response, 500, "server_error")
    assert b"secret-internal-detail" not in response.content and b"Traceback" not in response.content


def test_options_on_a_view_without_a_serializer_describes_it(owner_client, published_agent):
    for path in ["/api/v1/runs", "/api/v1/approvals", "/api/v1/agents/capabilities", "/api/v1/me",
                 f"/api/v1/agents/{published_agent.pk}/diff", f"/api/v1/agents/{published_agent.pk}/embeds",
                 "/api/v1/memory", "/api/v1/tools"]:
        response = owner_client.options(path)
        assert response.status_code == 200, (path, response.content[:300])
        assert "application/json" in response.json()["renders"]


def test_an_outsider_options_request_reveals_no_agent(api_as, outsider, outsider_org, published_agent):
    response = api_as(outsider, outsider_org).options(f"/api/v1/agents/{published_agent.pk}")
    assert "actions" not in response.json()


# ------------------------------------------------------------------ bodies


def test_a_json_body_over_the_limit_is_a_413_and_creates_nothing(debug, settings, owner_client):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    body = {"name": "Big", "instructions": "x" * 5_000}
    error = assert_envelope(owner_client.post("/api/v1/agents", body, format="json"), 413, "too_large")
    assert error["details"] == {"limit_bytes": 2_000}
    assert not Agent.objects.filter(name="Big").exists()


def test_a_multipart_field_over_the_limit_is_a_413(settings, owner_client):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    response = owner_client.post("/api/v1/organization/logo", {"note": "x" * 5_000}, format="multipart")
    assert_envelope(response, 413, "too_large")


def test_a_malformed_multipart_body_is_an_envelope_400(debug, owner_client):
    response = owner_client.generic("POST", "/api/v1/organization/logo", b"--nope\r\ngarbage",
                                    content_type="multipart/form-data; boundary=")
    assert_envelope(response, 400)


def test_json_nested_twenty_thousand_deep_is_a_400_and_creates_nothing(debug, owner_client):
    body = '{"name": "Deep", "instructions": ' + "[" * 20_000 + "]" * 20_000 + "}"
    response = owner_client.generic("POST", "/api/v1/agents", body, content_type="application/json")
    assert_envelope(response, 400, "too_deep")
    assert not Agent.objects.filter(name="Deep").exists()


def test_brackets_inside_strings_do_not_count_as_depth(owner_client):
    body = json.dumps({"name": "Brackets", "instructions": "[" * 500 + "{" * 500})
    response = owner_client.generic("POST", "/api/v1/agents", body, content_type="application/json")
    assert response.status_code == 201, response.content[:300]


def test_a_form_encoded_body_on_a_json_endpoint_is_a_415_that_says_so(debug, owner_client, published_agent):
    response = owner_client.post("/api/v1/agents", "name=Form&instructions=x",
                                 content_type="application/x-www-form-urlencoded")
    assert_envelope(response, 415, "unsupported_media_type")
    assert not Agent.objects.filter(name="Form").exists()
    response = owner_client.patch(f"/api/v1/agents/{published_agent.pk}", "name=Renamed",
                                  content_type="application/x-www-form-urlencoded")
    assert_envelope(response, 415, "unsupported_media_type")
    published_agent.refresh_from_db()
    assert published_agent.name == "Published"


# ------------------------------------------------------------------ NUL characters


def test_a_nul_in_a_json_string_is_a_422_and_creates_nothing(debug, owner_client):
    body = '{"name": "Nul\\u0000Agent", "instructions": "x"}'
    error = assert_envelope(owner_client.generic("POST", "/api/v1/agents", body, content_type="application/json"),
                            422, "invalid")
    assert error["details"] == {"where": "body"}
    assert not Agent.objects.filter(name__startswith="Nul").exists()


def test_an_escaped_backslash_before_u0000_is_not_a_nul(owner_client):
    body = json.dumps({"name": "Backslash", "instructions": "C:\\u0000"})
    assert owner_client.generic("POST", "/api/v1/agents", body, content_type="application/json").status_code == 201


def test_a_nul_in_a_query_parameter_is_a_422(debug, owner_client):
    assert_envelope(owner_client.get("/api/v1/runs?status=%00"), 422, "invalid")
    assert_envelope(owner_client.get("/api/v1/agents?search=a%00b"), 422, "invalid")


def test_a_nul_in_a_path_parameter_is_a_422(debug, client, owner_client):
    assert_envelope(client.get("/api/v1/embed/%00/config"), 422, "invalid")
    assert_envelope(owner_client.get("/api/v1/bots/%00"), 422, "invalid")
    assert_envelope(owner_client.get("/api/v1/agents/x/versions/%00"), 422, "invalid")


def test_a_nul_in_a_header_is_a_422(org, owner, api_as):
    client = api_as(owner)  # no X-Organization-Id of its own, so the request's one is sent
    assert_envelope(client.get("/api/v1/members", HTTP_X_ORGANIZATION_ID=f"{org.pk}\x00"), 422, "invalid")


def test_console_pages_keep_their_html_error_pages(client, settings):
    settings.DEBUG = False
    response = client.get("/no-such-console-page")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


# ------------------------------------------------------------------ the schema says so


def test_every_operation_documents_the_envelope_answers_of_the_edge(client):
    doc = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert doc["components"]["schemas"]["Error"]["required"] == ["error"]
    operations = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()
                  if method in {"get", "post", "put", "patch", "delete"}]
    assert len(operations) > 100
    for path, method, op in operations:
        expected = {"400", "401", "403", "404", "405", "422"}
        if "requestBody" in op:
            expected |= {"413", "415"}
        if method != "get":
            expected.add("429")
        assert expected <= set(op["responses"]), (method, path, sorted(expected - set(op["responses"])))
        error_response = op["responses"]["404"]
        assert "application/json" in error_response.get("content", {}), (method, path)
