"""POST /api/v1/visuals/reports: the watching console's report on a drawing, filed under the organization and
the person who posts it, in the JSON envelope; a viewer, an outsider and a stranger file nothing."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from capabilities.visuals import reports

URL = "/api/v1/visuals/reports"
DIGEST = reports.digest("svg", "<svg></svg>")


def filed(org, user) -> list[bytes]:
    return reports.client().lrange(reports.key(org.pk, user.pk, DIGEST), 0, -1)


def test_a_member_files_a_report_that_draw_then_reads(api_as, org, member):
    response = api_as(member, org).post(URL, {"digest": DIGEST, "errors": ["TypeError: x is null (line 4)"]},
                                        format="json")
    assert response.status_code == 202
    assert response.json() == {"digest": DIGEST, "errors": 1}
    assert async_to_sync(reports.wait)(org.pk, member.pk, DIGEST, 1) == ["TypeError: x is null (line 4)"]


def test_a_clean_report_is_an_empty_list(api_as, org, member):
    response = api_as(member, org).post(URL, {"digest": DIGEST}, format="json")
    assert response.status_code == 202 and response.json()["errors"] == 0
    assert async_to_sync(reports.wait)(org.pk, member.pk, DIGEST, 1) == []


def test_a_report_keeps_at_most_twenty_errors_of_five_hundred_characters(api_as, org, member):
    response = api_as(member, org).post(URL, {"digest": DIGEST, "errors": ["e" * 900] * 30}, format="json")
    assert response.status_code == 202 and response.json()["errors"] == 20
    kept = async_to_sync(reports.wait)(org.pk, member.pk, DIGEST, 1)
    assert kept == ["e" * 500] * 20


@pytest.mark.parametrize("body", [{"digest": "not-a-digest"}, {"digest": DIGEST.upper()}, {},
                                  {"digest": DIGEST, "errors": "one string"}, {"digest": DIGEST, "errors": ["x" * 2001]}])
def test_a_malformed_report_is_a_400_envelope_and_files_nothing(api_as, org, member, body):
    response = api_as(member, org).post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert filed(org, member) == []
    assert reports.client().keys("*visual-report*") == []


def test_a_viewer_cannot_file_a_report(api_as, org, viewer):
    response = api_as(viewer, org).post(URL, {"digest": DIGEST, "errors": []}, format="json")
    assert response.status_code == 403 and "error" in response.json()
    assert filed(org, viewer) == []


def test_an_outsider_naming_the_organization_gets_a_404_and_files_nothing(api_as, org, outsider, member):
    response = api_as(outsider, org).post(URL, {"digest": DIGEST, "errors": ["planted"]}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert filed(org, outsider) == [] and filed(org, member) == []
    assert reports.client().keys("*visual-report*") == []


def test_an_outsiders_report_in_their_own_organization_never_answers_ours(api_as, org, outsider_org, outsider,
                                                                          member):
    assert api_as(outsider, outsider_org).post(URL, {"digest": DIGEST, "errors": ["planted"]},
                                                format="json").status_code == 202
    assert async_to_sync(reports.wait)(org.pk, outsider.pk, DIGEST, 1) is None
    assert async_to_sync(reports.wait)(org.pk, member.pk, DIGEST, 1) is None
    assert async_to_sync(reports.wait)(outsider_org.pk, outsider.pk, DIGEST, 1) == ["planted"]


def test_nobody_signed_in_gets_the_envelope_and_files_nothing(db):
    response = APIClient().post(URL, {"digest": DIGEST, "errors": []}, format="json")
    assert response.status_code == 401 and "error" in response.json()
    assert reports.client().keys("*visual-report*") == []


def test_past_the_minutes_cap_a_report_is_a_429_and_files_nothing(api_as, org, member, ratelimit_clock):
    client = api_as(member, org)
    for n in range(reports.PER_MINUTE):
        assert client.post(URL, {"digest": reports.digest("svg", str(n))}, format="json").status_code == 202
    refused = client.post(URL, {"digest": DIGEST, "errors": ["late"]}, format="json")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
    assert filed(org, member) == []
    ratelimit_clock.advance(60)
    assert client.post(URL, {"digest": DIGEST}, format="json").status_code == 202


def test_a_wait_longer_than_the_redis_clients_default_socket_timeout_ends_without_a_report_not_an_error(org, member):
    """The spec's wait is up to 10 s; redis-py's sockets time out after 5 s unless told otherwise."""
    assert async_to_sync(reports.wait)(org.pk, member.pk, reports.digest("svg", "<svg>late</svg>"), 6) is None


def test_a_redis_that_cannot_be_reached_leaves_the_drawing_unchecked(org, member, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    assert async_to_sync(reports.wait)(org.pk, member.pk, DIGEST, 1) is None
