"""Local model servers without opening loopback (issue 44 §4): `MODEL_ALLOWED_PRIVATE_HOSTS` takes host:port
entries, `make run` allows Ollama's and LM Studio's usual ports and nothing else on loopback, and a refusal tells an
owner/admin exactly what to set while a builder or member reads a plain refusal without the setting's name.

Attacked with the outbound guard's cases: other ports on loopback, the IPv6 loopback, IPv4 in IPv6 clothing,
decimal / hex / octal spellings of 127.0.0.1, a name that answered a public address and then 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from pydantic_ai import Agent

from agenticos import hostports, netguard
from agents.models import ModelProfile, RunStatus
from agents.providers import build_model, describe_provider_error
from config.settings import LOCAL_MODEL_SERVERS, _host_list
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply

PROFILES = "/api/v1/model-profiles"
NAME = "models.example.test"
SETTING = "MODEL_ALLOWED_PRIVATE_HOSTS"


def check(url: str) -> netguard.Pinned:
    return asyncio.run(netguard.check_url(url, allowance=netguard.MODEL_HOSTS))


def refusal(url: str) -> netguard.AddressRefused:
    with pytest.raises(netguard.AddressRefused) as caught:
        check(url)
    return caught.value


# ------------------------------------------------------------------ entries


@pytest.mark.parametrize(("entry", "parsed"), [
    ("localhost", ("localhost", None)),
    ("localhost:11434", ("localhost", 11434)),
    ("127.0.0.1:1234", ("127.0.0.1", 1234)),
    ("[::1]:11434", ("::1", 11434)),
    ("[::1]", ("::1", None)),
    ("::1", ("::1", None)),
    ("fd00::/8", ("fd00::/8", None)),
    ("10.0.0.0/8:8000", ("10.0.0.0/8", 8000)),
])
def test_an_entry_is_a_host_and_an_optional_port(entry, parsed):
    assert tuple(hostports.parse(entry)) == parsed


@pytest.mark.parametrize("entry", ["localhost:", "localhost:http", "localhost:0", "localhost:65536", "[::1", ":11434",
                                   "[::1]11434"])
def test_a_malformed_entry_stops_the_start_naming_the_setting(entry, monkeypatch):
    monkeypatch.setenv(SETTING, f"127.0.0.1:11434,{entry}")
    with pytest.raises(ImproperlyConfigured, match=SETTING):
        _host_list(SETTING)


def _settings_in_a_fresh_process(**env: str) -> list[str]:
    code = "from django.conf import settings; import json; print(json.dumps(settings.MODEL_ALLOWED_PRIVATE_HOSTS))"
    environment = {k: v for k, v in os.environ.items() if k not in ("AGENTICOS_LAUNCHER", SETTING)}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", **env)
    done = subprocess.run([sys.executable, "-c", "import django; django.setup(); " + code], env=environment,
                          capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_make_run_allows_ollama_and_lm_studio_ports_on_loopback_and_other_deployments_allow_nothing():
    launched = _settings_in_a_fresh_process(AGENTICOS_LAUNCHER="true")
    assert launched == LOCAL_MODEL_SERVERS
    assert {hostports.parse(e).port for e in launched} == {11434, 1234}
    assert _settings_in_a_fresh_process() == []
    # The operator's own value wins, also under make run.
    assert _settings_in_a_fresh_process(AGENTICOS_LAUNCHER="true", **{SETTING: "gpu.lan:8000"}) == ["gpu.lan:8000"]


# ------------------------------------------------------------------ the guard with make run's list


@pytest.fixture
def local_servers(settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = list(LOCAL_MODEL_SERVERS)


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "http://127.0.0.1:11434/v1", "http://[::1]:11434/v1",
                                 "http://localhost:1234/v1", "http://127.0.0.1:1234/v1", "http://[::1]:1234/v1"])
def test_the_usual_local_model_ports_are_reached(local_servers, url):
    pinned = check(url)
    assert netguard.is_private(pinned.ip) and pinned.port in (11434, 1234)


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:5432/v1",  # PostgreSQL
    "http://127.0.0.1:6379/v1",  # Redis
    "http://localhost:8000/v1",  # the platform itself
    "http://127.0.0.1:8765/v1",  # the sandbox service
    "http://localhost/v1",  # port 80
    "https://127.0.0.1/v1",  # port 443
    "http://[::1]:6379/v1",  # the IPv6 loopback
    "http://[::ffff:127.0.0.1]:6379/v1",  # IPv4-mapped
    "http://[::ffff:0:127.0.0.1]:5432/v1",  # IPv4-translated
    "http://2130706433:6379/v1",  # 127.0.0.1 in decimal
    "http://0x7f.1:5432/v1",  # in hex, short form
    "http://017700000001:8765/v1",  # in octal
    "http://127.1:6379/v1",  # short dotted form
    "http://10.0.0.5:11434/v1",  # the right port on another private address
    "http://[fd00::5]:11434/v1",
])
def test_every_other_loopback_port_and_spelling_stays_refused(local_servers, url):
    exc = refusal(url)
    assert "private or local address" in str(exc)
    assert SETTING not in str(exc) and SETTING in exc.hint


def test_the_metadata_address_is_refused_on_a_local_models_port_too(local_servers):
    assert "metadata" in str(refusal("http://169.254.169.254:11434/v1"))


def test_ipv4_spellings_of_loopback_on_the_listed_port_reach_the_same_server(local_servers):
    """The same destination as 127.0.0.1:11434, which is allowed: the connection goes to the checked address."""
    for url in ("http://2130706433:11434/v1", "http://[::ffff:127.0.0.1]:11434/v1", "http://127.1:1234/v1"):
        pinned = check(url)
        assert netguard.embedded_ipv4(pinned.ip) is not None or pinned.ip == "127.0.0.1", url


def test_a_name_rebound_to_loopback_reaches_no_other_port(local_servers, dns):
    dns[NAME] = ["93.184.216.34"]
    assert check(f"http://{NAME}:6379/v1").ip == "93.184.216.34"
    dns[NAME] = ["127.0.0.1"]  # the rebinding answer, at connect
    for port in (6379, 5432, 8000, 80):
        assert "127.0.0.1" in str(refusal(f"http://{NAME}:{port}/v1"))
    dns[NAME] = ["::1"]
    assert "::1" in str(refusal(f"http://{NAME}:6379/v1"))


def test_a_name_entry_admits_that_name_only_and_on_its_port_only(settings, dns):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["gpu.lan:8000"]
    dns["gpu.lan"] = ["10.1.2.3"]
    dns[NAME] = ["10.1.2.3"]
    assert check("http://gpu.lan:8000/v1").ip == "10.1.2.3"
    assert SETTING in refusal("http://gpu.lan:8001/v1").hint
    refusal(f"http://{NAME}:8000/v1")  # another name for the same address: not listed


def test_an_entry_without_a_port_still_admits_every_port(settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    assert check("http://127.0.0.1:6379/v1").port == 6379


def test_the_hint_names_the_exact_entry_to_add(settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    assert "adds localhost:11434 to MODEL_ALLOWED_PRIVATE_HOSTS" in refusal("http://localhost:11434/v1").hint
    assert "adds [::1]:1234 to MODEL_ALLOWED_PRIVATE_HOSTS" in refusal("http://[::1]:1234/v1").hint


def test_other_families_do_not_gain_the_model_servers(local_servers, settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(netguard.AddressRefused):
        asyncio.run(netguard.check_url("http://127.0.0.1:11434/api/tags"))  # a custom tool's allowance


# ------------------------------------------------------------------ end to end: a run


@pytest.mark.django_db
def test_a_listed_port_is_reached_and_the_next_port_on_loopback_is_not(org, settings):
    with FakeOpenAIServer() as listed, FakeOpenAIServer() as other:
        settings.MODEL_ALLOWED_PRIVATE_HOSTS = [f"127.0.0.1:{listed.port}"]
        listed.queue(Reply.text("local model here"))
        profile = factories.model_profile(org, "ollama", "llama3.2", base_url=listed.base_url,
                                          settings={"max_retries": 0})
        assert asyncio.run(Agent(build_model(profile)).run("hi")).output == "local model here"

        elsewhere = factories.model_profile(org, "ollama", "llama3.2", base_url=other.base_url,
                                            settings={"max_retries": 0})
        with pytest.raises(Exception) as caught:
            asyncio.run(Agent(build_model(elsewhere)).run("hi"))
        summary = describe_provider_error(caught.value)
        assert other.requests == []
        assert f"127.0.0.1:{other.port} to {SETTING}" in summary["hint"]
    assert summary["category"] == "address_refused" and SETTING not in summary["message"]


# ------------------------------------------------------------------ who reads the setting's name


def _problems(response) -> dict[str, str]:
    return {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}


@pytest.mark.django_db
def test_an_owner_reads_what_to_set_and_a_builder_a_plain_refusal(org, owner, builder, api_as, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = list(LOCAL_MODEL_SERVERS)
    body = {"label": "redis?", "provider": "openai_compatible", "model": "m", "base_url": "http://127.0.0.1:6379/v1"}

    as_owner = api_as(owner, org).post(PROFILES, body, format="json")
    assert as_owner.status_code == 422
    assert "adds 127.0.0.1:6379 to MODEL_ALLOWED_PRIVATE_HOSTS" in _problems(as_owner)["base_url"]

    as_builder = api_as(builder, org).post(PROFILES, body, format="json")
    assert as_builder.status_code == 422
    message = _problems(as_builder)["base_url"]
    assert "private or local address" in message and "An administrator of the deployment can allow it" in message
    assert "ALLOWED" not in as_builder.content.decode()
    assert not ModelProfile.objects.filter(organization=org, label="redis?").exists()


@pytest.mark.django_db
def test_weaker_roles_cannot_create_a_profile_to_probe_with(org, member, viewer, api_as, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    body = {"label": "probe", "provider": "openai_compatible", "model": "m", "base_url": "http://127.0.0.1:6379/v1"}
    for user in (member, viewer):
        response = api_as(user, org).post(PROFILES, body, format="json")
        assert response.status_code == 403 and "ALLOWED" not in response.content.decode()
    assert not ModelProfile.objects.filter(organization=org, label="probe").exists()


@pytest.mark.django_db(transaction=True)  # the runner reads the run from a thread of its own
def test_a_refused_run_shows_the_hint_to_an_owner_on_its_page_and_never_to_the_member_or_the_api(
    org, owner, member, settings, api_as
):
    from django.test import Client

    from agenticos.tenancy import SESSION_KEY
    from agents import services
    from tests.runner.conftest import actor_of
    from tests.runner.test_execute import run_now, start

    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    with FakeOpenAIServer() as server:
        profile = factories.model_profile(org, "openai_compatible", "m", base_url=server.base_url,
                                          settings={"max_retries": 0})
        actor = actor_of(owner, org)
        agent = services.create_agent(actor=actor, name="Local", spec={"name": "Local",
                                                                        "model_profile_id": str(profile.pk)})
        version = services.publish_agent(actor=actor, agent=agent)
        run = start(org, member, agent, version, prompt="hi")
        run_now(run)
        assert server.requests == []
        port = server.port
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and SETTING in run.error["hint"]

    def page(user) -> str:
        client = Client()
        client.force_login(user)
        session = client.session
        session[SESSION_KEY] = str(org.pk)
        session.save()
        response = client.get(f"/activity/runs/{run.pk}/")
        assert response.status_code == 200
        return response.content.decode()

    assert f"127.0.0.1:{port} to {SETTING}" in page(owner)
    member_page = page(member)
    assert "private or local address" in member_page and SETTING not in member_page
    for user in (member, owner):
        detail = api_as(user, org).get(f"/api/v1/runs/{run.pk}")
        assert detail.status_code == 200 and SETTING not in detail.content.decode()
