"""Model profiles' base URLs go through the outbound guard: at save (the API's 422) and on every request the
provider's client sends (address pinned, redirects re-checked, the key never sent to a refused address)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic_ai import Agent

from agents.models import ModelProfile, RunStatus
from agents.providers import build_model, describe_provider_error
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.runner.conftest import actor_of

KEY = "sk-live-model-key-0123456789"
PROFILES = "/api/v1/model-profiles"
NAME = "models.example.test"


def _problems(response) -> dict[str, str]:
    return {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}


def _compatible(org, base_url: str, *, provider: str = "openai_compatible", **extra) -> ModelProfile:
    """A profile written straight to the database (saved before the guard existed, or by a migration)."""
    return factories.model_profile(org, provider, "fake-model", api_key=KEY, base_url=base_url,
                                   settings={"max_retries": 0}, **extra)


def _failure(model) -> BaseException:
    with pytest.raises(Exception) as caught:
        asyncio.run(Agent(model).run("hello"))
    return caught.value


class _Redirector(ThreadingHTTPServer):
    target = ""
    hits = 0


class _RedirectHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(307)
        self.send_header("Location", self.server.target)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def redirector() -> Iterator[_Redirector]:
    """A model server that answers every POST with a 307 to `redirector.target`."""
    server = _Redirector(("127.0.0.1", 0), _RedirectHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# ------------------------------------------------------------------ at save


@pytest.mark.parametrize("url", ["http://169.254.169.254/v1", "http://[fd00:ec2::254]/v1",
                                 "http://[::ffff:169.254.169.254]/v1"])
def test_a_profile_at_the_metadata_address_is_refused_at_save_even_when_listed(org, owner, api_as, settings, url):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["169.254.169.254", "169.254.0.0/16", "fd00:ec2::254"]
    response = api_as(owner, org).post(PROFILES, {"label": "meta", "provider": "openai_compatible",
                                                  "model": "m", "base_url": url}, format="json")
    assert response.status_code == 422, response.content
    assert "metadata" in _problems(response)["base_url"]
    assert not ModelProfile.objects.filter(organization=org, label="meta").exists()


def test_a_private_address_is_refused_at_save_unless_the_operator_lists_it(org, owner, api_as, settings):
    client = api_as(owner, org)
    body = {"label": "lan", "provider": "openai_compatible", "model": "m", "base_url": "http://10.1.2.3:8000/v1"}
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    refused = client.post(PROFILES, body, format="json")
    assert refused.status_code == 422
    assert "MODEL_ALLOWED_PRIVATE_HOSTS" in _problems(refused)["base_url"]
    assert not ModelProfile.objects.filter(organization=org, label="lan").exists()
    # The tools' allowance is not the models' one: listing the host for custom tools does not let a key go there.
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["10.0.0.0/8"]
    assert client.post(PROFILES, body, format="json").status_code == 422

    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["10.0.0.0/8"]
    assert client.post(PROFILES, body, format="json").status_code == 201


def test_a_hostname_that_resolves_to_a_private_address_is_refused_at_save(org, owner, api_as, settings, dns):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    dns[NAME] = ["93.184.216.34", "192.168.1.20"]  # one private answer among public ones is enough
    response = api_as(owner, org).post(PROFILES, {"label": "n", "provider": "openai_compatible", "model": "m",
                                                  "base_url": f"http://{NAME}/v1"}, format="json")
    assert response.status_code == 422 and "192.168.1.20" in _problems(response)["base_url"]
    assert not ModelProfile.objects.filter(organization=org, label="n").exists()


def test_an_update_to_a_private_address_is_refused_and_leaves_the_profile_as_it_was(org, owner, api_as, settings,
                                                                                     dns, outsider, outsider_org):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    dns[NAME] = ["93.184.216.34"]
    client = api_as(owner, org)
    created = client.post(PROFILES, {"label": "pub", "provider": "openai_compatible", "model": "m",
                                     "base_url": f"https://{NAME}/v1"}, format="json")
    assert created.status_code == 201, created.content
    profile_id = created.json()["id"]

    response = client.patch(f"{PROFILES}/{profile_id}", {"base_url": "http://169.254.169.254/latest"}, format="json")
    assert response.status_code == 422 and "metadata" in _problems(response)["base_url"]
    assert ModelProfile.objects.get(pk=profile_id).base_url == f"https://{NAME}/v1"
    # Another organization cannot even reach the profile to try.
    foreign = api_as(outsider, outsider_org).patch(f"{PROFILES}/{profile_id}", {"base_url": "https://x.test"},
                                                   format="json")
    assert foreign.status_code == 404
    assert ModelProfile.objects.get(pk=profile_id).base_url == f"https://{NAME}/v1"


# ------------------------------------------------------------------ at connect


@pytest.mark.django_db(transaction=True)  # the runner reads the run from a thread of its own
def test_a_profile_saved_earlier_at_a_loopback_address_never_reaches_it_through_a_run(org, owner, settings):
    """The run fails with the guard's reason; the server never receives a request, so never sees the key."""
    from agents import services
    from tests.runner.test_execute import run_now, start

    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    with FakeOpenAIServer() as server:
        profile = _compatible(org, server.base_url)
        actor = actor_of(owner, org)
        agent = services.create_agent(actor=actor, name="Leaky", spec={"name": "Leaky",
                                                                         "model_profile_id": str(profile.pk)})
        version = services.publish_agent(actor=actor, agent=agent)
        run = start(org, owner, agent, version, prompt="hi")
        frames = run_now(run)

        assert server.requests == []
        port = server.port
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["category"] == "address_refused"
    # The person who ran it reads a plain refusal; the setting to change is the operator's hint, kept apart.
    assert "127.0.0.1" in run.error["message"] and "MODEL_ALLOWED_PRIVATE_HOSTS" not in run.error["message"]
    assert f"127.0.0.1:{port} to MODEL_ALLOWED_PRIVATE_HOSTS" in run.error["hint"]
    assert "hint" not in run.public_error and "MODEL_ALLOWED_PRIVATE_HOSTS" not in json.dumps(frames)
    assert frames[-1]["type"] == "error"
    assert KEY not in json.dumps(run.error) and KEY not in json.dumps(frames)
    assert not SpendEntry.objects.filter(run=run).exists()


@pytest.mark.parametrize("provider", ["openai", "openai_compatible", "anthropic", "ollama"])
def test_every_provider_client_is_refused_a_private_address(org, settings, provider):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    with FakeOpenAIServer() as server:
        model = build_model(_compatible(org, server.base_url, provider=provider))
        summary = describe_provider_error(_failure(model))
        assert server.requests == []
    assert summary["category"] == "address_refused", summary
    assert KEY not in json.dumps(summary)


def test_ollama_without_a_base_url_goes_to_localhost_only_when_the_operator_lists_it(org, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    model = build_model(factories.model_profile(org, "ollama", "llama3.2"))
    summary = describe_provider_error(_failure(model))
    assert summary["category"] == "address_refused" and "localhost" in summary["message"]


def test_a_name_resolving_to_loopback_is_refused_at_connect_and_pinned_when_listed(org, settings, dns):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    with FakeOpenAIServer() as server:
        dns[NAME] = ["127.0.0.1"]
        profile = _compatible(org, f"http://{NAME}:{server.port}/v1")
        summary = describe_provider_error(_failure(build_model(profile)))
        assert summary["category"] == "address_refused" and NAME in summary["message"]
        assert server.requests == []

        # Listed by name: the request goes to the address the guard checked, under the name it was given.
        settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME]
        server.queue(Reply.text("pinned"))
        result = asyncio.run(Agent(build_model(profile)).run("hi"))
        assert result.output == "pinned"
        (request,) = server.chat_requests
        assert request.headers["host"] == f"{NAME}:{server.port}" and request.bearer == KEY


def test_a_name_that_answered_a_public_address_at_save_and_the_metadata_one_at_connect_is_refused(
    org, owner, api_as, settings, dns
):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME]  # even a listed name never reaches the metadata address
    dns[NAME] = ["93.184.216.34"]
    created = api_as(owner, org).post(PROFILES, {"label": "rebind", "provider": "openai_compatible", "model": "m",
                                                 "base_url": f"http://{NAME}/v1"}, format="json")
    assert created.status_code == 201
    dns[NAME] = ["169.254.169.254"]
    model = build_model(ModelProfile.objects.get(pk=created.json()["id"]))
    summary = describe_provider_error(_failure(model))
    assert summary["category"] == "address_refused" and "metadata" in summary["message"]


def test_a_redirect_from_an_allowed_host_to_a_private_one_is_refused(org, settings, dns, redirector):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME]
    dns[NAME] = ["127.0.0.1"]
    with FakeOpenAIServer() as private:
        redirector.target = f"{private.base_url}/chat/completions"
        profile = _compatible(org, f"http://{NAME}:{redirector.server_address[1]}/v1")
        summary = describe_provider_error(_failure(build_model(profile)))
        assert redirector.hits == 1
        assert private.requests == []
    assert summary["category"] == "address_refused" and "127.0.0.1" in summary["message"]


def test_a_redirect_to_another_allowed_origin_is_followed_without_the_key(org, settings, dns, redirector):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME, "127.0.0.1"]
    dns[NAME] = ["127.0.0.1"]
    with FakeOpenAIServer() as elsewhere:
        elsewhere.queue(Reply.text("moved"))
        redirector.target = f"{elsewhere.base_url}/chat/completions"
        profile = _compatible(org, f"http://{NAME}:{redirector.server_address[1]}/v1")
        result = asyncio.run(Agent(build_model(profile)).run("hi"))
        (request,) = elsewhere.chat_requests
    assert result.output == "moved"
    assert request.bearer in (None, "") and KEY not in json.dumps(request.headers)


def test_a_redirect_to_a_file_url_is_refused(org, settings, dns, redirector):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [NAME]
    dns[NAME] = ["127.0.0.1"]
    redirector.target = "file:///etc/passwd"
    profile = _compatible(org, f"http://{NAME}:{redirector.server_address[1]}/v1")
    summary = describe_provider_error(_failure(build_model(profile)))
    assert summary["category"] == "address_refused" and "file" in summary["message"]


def test_a_refused_primary_falls_back_to_an_allowed_profile(org, settings, dns):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    dns[NAME] = ["10.9.9.9"]
    with FakeOpenAIServer() as working:
        working.queue(Reply.text("from the fallback"))
        primary = _compatible(org, f"http://{NAME}/v1")
        primary.fallbacks.add(_compatible(org, working.base_url))
        result = asyncio.run(Agent(build_model(primary)).run("hi"))
    assert result.output == "from the fallback"
