"""A redirect to a scheme that is not http(s) (`file:`, `gopher:`, `ftp:`, a `Location` that is no URL) is a
refusal the model or the builder can read — it used to escape as a ValueError (a 500, a crashed tool call)."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest

from agenticos import netguard
from tests import factories
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync

pytestmark = pytest.mark.usefixtures("tool_capabilities", "local_allowed")

HOSTILE = ["file:///etc/passwd", "gopher://127.0.0.1:6379/_FLUSHALL", "ftp://127.0.0.1/x", "dict://127.0.0.1:11211/",
           "http://:99999999/"]


def _hop(rest_api, target: str) -> str:
    return f"{rest_api.base}/redirect?to={quote(target, safe='')}"


@pytest.mark.parametrize("target", HOSTILE)
def test_the_guard_refuses_the_hop_with_a_readable_reason(rest_api, target):
    with pytest.raises(netguard.AddressRefused) as refused:
        asyncio.run(netguard.safe_request("GET", _hop(rest_api, target), headers={"Authorization": "Bearer k-1"}))
    assert "redirect" in str(refused.value).lower()
    assert len(rest_api.requests) == 1  # the first hop only; nothing was sent anywhere else


@pytest.mark.parametrize("target", HOSTILE[:2])
def test_a_custom_tool_redirected_to_file_or_gopher_tells_the_model_it_was_refused(db, org, rest_api, target):
    tool = factories.custom_tool(org, alias="hop", url=_hop(rest_api, target))
    outcome = run_sync(spec({"id": "custom_tools", "config": {"tool_ids": [str(tool.pk)]}}), [("hop", {})],
                       org_id=str(org.pk))
    (answer,) = outcome.returns
    assert answer.startswith("Refused:") and "only http(s) is followed" in answer


def test_the_builders_test_call_answers_a_refusal_not_a_500(db, org, builder, api_as, rest_api):
    tool = factories.custom_tool(org, alias="hop", url=_hop(rest_api, "file:///etc/passwd"))
    response = api_as(builder, org).post(f"/api/v1/tools/{tool.pk}/test", {"args": {}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is False and "only http(s) is followed" in response.content.decode()


@pytest.mark.parametrize("target", HOSTILE[:2])
def test_web_fetch_redirected_to_file_or_gopher_is_refused(settings, rest_api, target):
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch"]
    outcome = run_sync(spec({"id": "web_fetch", "config": {}}), [("web_fetch", {"url": _hop(rest_api, target)})],
                       org_id="00000000-0000-0000-0000-000000000001")
    told = " ".join(str(x) for x in [*outcome.returns, *outcome.retries])
    assert "only http(s) is followed" in told
