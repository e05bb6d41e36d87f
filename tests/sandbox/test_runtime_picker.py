"""The Builder's runtime setting of the sandbox capability (schema_forms PICKERS[("sandbox", "runtime")]): the
runtimes the connection's sandboxd reports, read live from the real test sandboxd; a saved runtime the service
no longer offers stays selected and says so; an unreadable service leaves only its default with the reason;
another organization's connection is never asked."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.utils.html import escape

from capabilities import registry
from console.schema_forms import config_from_post, fields_for
from tests import factories
from tests.fakes.rest_api import FakeRestAPI
from tests.sandbox.sandboxd_server import closed_port
from workspaces import connections
from workspaces.models import SandboxConnection

pytestmark = pytest.mark.django_db


def _schema() -> dict:
    return next(c["config_schema"] for c in registry.catalog_json()["capabilities"] if c["id"] == "sandbox")


def runtime_field(org, config: dict) -> tuple[dict, str]:
    fields = fields_for(_schema(), config, prefix="cap-sandbox", errors={}, organization_id=org.pk)
    field = next(f for f in fields if f["name"] == "runtime")
    return field, render_to_string("console/_config_field.html", {"f": field})


def _options(field: dict) -> list[tuple[str, str, bool]]:
    return [(o["value"], o["label"], o["selected"]) for o in field["options"]]


def test_it_offers_the_runtimes_the_own_sandboxd_reports_now(org, owner, own_sandboxd):
    reported = own_sandboxd.get("/v1/runtimes").json()["runtimes"]
    assert reported  # the test host has at least python

    field, html = runtime_field(org, {"backend": "service"})

    assert field["kind"] == "select" and field["note"] == ""
    assert _options(field) == [("", "The service's default", True)] + [
        (r["alias"], f"{r['alias']} — {r['description']}" if r["description"] else r["alias"], False)
        for r in reported]
    assert '<option value="">The service&#x27;s default</option>' not in html  # selected, as drawn below
    assert '<option value="" selected>The service&#x27;s default</option>' in html
    assert html.count("<option") == len(reported) + 1  # no second, generic "Default"
    first = reported[0]["alias"]
    field, html = runtime_field(org, {"backend": "service", "runtime": first})
    assert f'<option value="{first}" selected>' in html
    assert config_from_post(_schema(), {"config.backend": "service", "config.runtime": first})["runtime"] == first
    assert "runtime" not in config_from_post(_schema(), {"config.backend": "service", "config.runtime": ""})


def test_a_saved_runtime_the_service_no_longer_offers_stays_selected_and_marked(org, owner, own_sandboxd):
    field, html = runtime_field(org, {"backend": "service", "runtime": "cobol"})

    assert _options(field)[-1] == ("cobol", "cobol (not offered by the service now)", True)
    assert '<option value="cobol" selected>cobol (not offered by the service now)</option>' in html
    assert [o for o in field["options"] if o["selected"]] == [field["options"][-1]]


def test_a_registered_connection_is_read_through_the_outbound_guard(org, owner, admin_user, sandboxd_server,
                                                                    settings, tmp_path):
    settings.SANDBOXD_TOKEN_FILE = str(tmp_path / "missing.token")
    settings.SANDBOXD_TOKEN = ""
    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    actor = _actor(admin_user, org)
    token = factories.secret(org, value=sandboxd_server.token)
    connection = connections.register(actor=actor, name="Build farm", url=sandboxd_server.url,
                                      secret_id=str(token.pk))
    reported = {r["alias"] for r in sandboxd_server.get("/v1/runtimes").json()["runtimes"]}

    field, _html = runtime_field(org, {"backend": "service", "connection_id": str(connection.pk)})
    assert {o["value"] for o in field["options"]} == {""} | reported

    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = []  # the operator withdraws the allowance: refused, not read
    field, html = runtime_field(org, {"backend": "service", "connection_id": str(connection.pk)})
    assert _options(field) == [("", "The service's default", True)]
    assert "could not be read" in field["note"] and "refused" in field["note"] and escape(field["note"]) in html
    assert sandboxd_server.token not in html


def test_an_unreachable_service_leaves_only_its_default_with_the_reason(org, owner, admin_user, settings, tmp_path):
    settings.SANDBOXD_TOKEN_FILE = str(tmp_path / "missing.token")
    settings.SANDBOXD_TOKEN = ""
    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with closed_port() as port:
        connection = connections.register(actor=_actor(admin_user, org), name="Down", url=f"http://127.0.0.1:{port}",
                                          secret_id=str(factories.secret(org, value="d" * 40).pk), make_default=True)
        field, html = runtime_field(org, {"backend": "service", "runtime": "python"})
    assert _options(field) == [("", "The service's default", False),
                               ("python", "python (not offered by the service now)", True)]
    assert "could not be reached" in field["note"] and escape(field["note"]) in html
    assert "d" * 40 not in html
    assert SandboxConnection.objects.filter(organization=org).get() == connection


def test_without_any_connection_only_the_default_is_offered(org, owner, settings, tmp_path):
    settings.SANDBOXD_TOKEN_FILE = str(tmp_path / "missing.token")
    settings.SANDBOXD_TOKEN = ""
    field, _html = runtime_field(org, {"backend": "service"})
    assert _options(field) == [("", "The service's default", True)]
    assert "has no sandbox connection" in field["note"]


def test_another_organizations_connection_is_never_asked(org, owner, outsider_org, outsider, own_sandboxd, settings):
    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    theirs_server = FakeRestAPI().start()
    try:
        theirs = connections.register(actor=_actor(outsider, outsider_org), name="Theirs secret farm",
                                      url=theirs_server.base,
                                      secret_id=str(factories.secret(outsider_org, value="u" * 40).pk))
        field, html = runtime_field(org, {"backend": "service", "connection_id": str(theirs.pk)})
        assert theirs_server.requests == []
    finally:
        theirs_server.stop()
    assert _options(field) == [("", "The service's default", True)]
    assert "no longer exists" in field["note"]
    assert "Theirs secret farm" not in html and "u" * 40 not in html
    # Their connection is untouched and ours was not registered in its place by the picker's read.
    assert not SandboxConnection.objects.filter(organization=org).exists()


def _actor(user, org):
    from tests.runner.conftest import actor_of

    return actor_of(user, org)


def test_stored_files_read_no_service_and_register_no_connection(org, owner, own_sandboxd):
    field, html = runtime_field(org, {})
    assert _options(field) == [("", "The service's default", True)]
    assert "Choose the sandbox service as the backend" in field["note"]
    assert not SandboxConnection.objects.filter(organization=org).exists()  # the page view registered nothing
