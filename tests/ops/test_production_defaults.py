"""`make run` is how one machine hosts itself, so it serves with DEBUG off (issue 37): an unknown page or a server
error answers the branded page, never Django's technical one (every URL pattern on a 404, the traceback and the
settings on a 500); /api/ keeps its JSON envelope. `make dev` is the same with DEBUG on. With DEBUG off the
machine still works on plain http://127.0.0.1: static files, its generated keys, sign-in with its cookies."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.test import Client

from config import launcher
from tests import factories
from tests.fakes import live_daphne
from tests.ops.failing_app import LEAKED_VALUE, RAISES_AROUND_THE_EDGE

ROOT = Path(__file__).resolve().parents[2]
# What Django's technical pages show and the branded ones must not: the URL patterns tried (404), the
# traceback, the exception's message and the settings (500).
TECHNICAL_404 = ("URLconf", "healthz", "api/v1/")
TECHNICAL_500 = ("Traceback", LEAKED_VALUE, "ROOT_URLCONF", "SECRET_KEY")


def _launcher_line(target: str) -> str:
    dry_run = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)  # noqa: S607
    assert dry_run.returncode == 0, dry_run.stderr
    return next(line for line in dry_run.stdout.splitlines() if "config.launcher" in line)


def test_make_run_starts_daphne_with_debug_off_and_make_dev_with_debug_on(monkeypatch):
    monkeypatch.delenv("DEBUG", raising=False)
    web = launcher.process_env("web")
    assert web["DEBUG"] == "false" and web["AGENTICOS_LAUNCHER"] == "true"
    assert "DEBUG=" not in _launcher_line("run")
    dev = _launcher_line("dev")
    assert dev.startswith("DEBUG=true ")
    monkeypatch.setenv("DEBUG", "true")  # what `make dev` puts in the launcher's environment
    assert launcher.process_env("web")["DEBUG"] == "true"


# ------------------------------------------------------------------ the settings of a launched process

# All computed by the settings module (the keys are generated there): reading them imports config.settings, not
# every app (django.setup() took ~30 s of a loaded 2-core machine per process).
LAUNCHED_SETTINGS = (
    "import hashlib, json; from django.conf import settings as s; print(json.dumps({"
    "'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS, 'secure': [s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE], "
    "'keys': [hashlib.sha256(k.encode()).hexdigest() for k in (s.SECRET_KEY, s.VAULT_MASTER_KEY)]}))"
)


def launched_settings(data_dir: Path, **extra: str) -> dict:
    with pytest.MonkeyPatch.context() as patch:
        for name in ("DEBUG", "SECRET_KEY", "VAULT_MASTER_KEY", "ALLOWED_HOSTS", "FRONTEND_URL"):
            patch.delenv(name, raising=False)
        env = launcher.process_env("web")
    env.update(AGENTICOS_DATA_DIR=str(data_dir), DATABASE_URL="postgres://settings@localhost/settings",
               REDIS_URL="redis://localhost:6379/0", **extra)
    result = subprocess.run([sys.executable, "-c", LAUNCHED_SETTINGS], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_text().strip().encode()).hexdigest()


def test_a_launched_machine_keeps_its_generated_keys_and_answers_to_its_own_names(tmp_path):
    launched = launched_settings(tmp_path)
    assert launched["debug"] is False
    # The keys are generated into the data dir, readable by this user only, and `make dev` reads the same ones
    # (a vault sealed under one opens under the other).
    for name in ("secret_key", "vault_master_key"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o600
    assert launched["keys"] == [_digest(tmp_path / "secret_key"), _digest(tmp_path / "vault_master_key")]
    assert launched_settings(tmp_path, DEBUG="true")["keys"] == launched["keys"]
    assert launched["hosts"] == ["localhost", "127.0.0.1", "[::1]"]
    # Plain http on loopback: a Secure cookie would not come back from Safari or a script, and protects nothing.
    assert launched["secure"] == [False, False]


def test_behind_a_tls_proxy_the_launched_machine_answers_to_it_with_secure_cookies(tmp_path):
    launched = launched_settings(tmp_path, FRONTEND_URL="https://agents.example.com")
    assert launched["hosts"] == ["localhost", "127.0.0.1", "[::1]", "agents.example.com"]
    assert launched["secure"] == [True, True]
    assert launched_settings(tmp_path, ALLOWED_HOSTS="only.example.com")["hosts"] == ["only.example.com"]


# ------------------------------------------------------------------ the error pages, in process


@pytest.fixture
def anonymous():
    return Client(raise_request_exception=False)


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_console_url_is_the_branded_404_without_the_url_patterns(anonymous, settings, debug):
    settings.DEBUG = debug
    for path in ("/no-such-page/", "/metrics/"):
        response = anonymous.get(path)
        page = response.content.decode()
        assert response.status_code == 404
        if debug:  # `make dev`: Django's technical page, which the markers below recognise
            assert all(marker in page for marker in TECHNICAL_404), path
            continue
        assert 'data-error-page="404"' in page and "We could not find that page" in page
        assert not [marker for marker in TECHNICAL_404 if marker in page], path


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_a_console_view_that_raises_is_the_branded_500_without_a_traceback(anonymous, settings, debug):
    settings.DEBUG = debug
    settings.ROOT_URLCONF = "tests.ops.failing_app"
    response = anonymous.get("/raises/")
    page = response.content.decode()
    assert response.status_code == 500
    if debug:
        assert all(marker in page for marker in TECHNICAL_500)
        return
    assert 'data-error-page="500"' in page and "favicon.svg" in page
    assert not [marker for marker in TECHNICAL_500 if marker in page]


@pytest.mark.django_db
def test_api_paths_keep_the_json_envelope_with_debug_off(anonymous, settings):
    settings.DEBUG = False
    settings.ROOT_URLCONF = "tests.ops.failing_app"
    for path, status, code in (("/api/v1/no-such-thing", 404, "not_found"), ("/api/no-such-thing/", 404, "not_found"),
                               ("/api/v1/raises", 500, "server_error")):
        response = anonymous.get(path)
        assert response.status_code == status and response["Content-Type"] == "application/json", path
        assert response.json()["error"]["code"] == code
        assert LEAKED_VALUE not in response.content.decode()


@pytest.mark.django_db
def test_an_api_error_raised_around_the_api_edge_is_still_the_envelope(anonymous, settings):
    """handler500 is the last word: an exception in a middleware outside ApiEdgeMiddleware never reaches it."""
    settings.DEBUG = False
    settings.ROOT_URLCONF = "tests.ops.failing_app"
    settings.MIDDLEWARE = [settings.MIDDLEWARE[0], "tests.ops.failing_app.RaisingMiddleware", *settings.MIDDLEWARE[1:]]
    response = anonymous.get(RAISES_AROUND_THE_EDGE)
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "server_error"
    assert LEAKED_VALUE not in response.content.decode()


# ------------------------------------------------------------------ a real daphne, as `make run` starts it


@pytest.fixture(scope="module")
def launched(django_db_setup, django_db_blocker) -> Iterator[str]:
    """daphne with the environment the launcher gives its web process (only the URLs differ: they add a page
    that raises, tests.ops.failing_settings), on this session's test database.

    Every test that uses it is transactional, though two need no rows: pytest-django runs the transactional tests
    of a session after the others, so a module fixture shared across both kinds is started once for each."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DEBUG", raising=False)
        added = {key: value for key, value in launcher.process_env("web").items() if os.environ.get(key) != value}
    added["DJANGO_SETTINGS_MODULE"] = "tests.ops.failing_settings"
    with django_db_blocker.unblock(), live_daphne.serving_daphne("config.asgi:application", "launched",
                                                                 env=added) as base:
        yield base


@pytest.mark.django_db(transaction=True)  # run beside the sign-in test: see `launched`
def test_the_launched_server_answers_unknown_pages_and_errors_with_the_branded_pages(launched):
    for path in ("/metrics/", "/no-such-page/"):
        response = httpx.get(f"{launched}{path}", timeout=30)
        page = response.text
        assert response.status_code == 404 and response.headers["content-type"].startswith("text/html"), path
        assert 'data-error-page="404"' in page and not [marker for marker in TECHNICAL_404 if marker in page], path
    response = httpx.get(f"{launched}/raises/", timeout=30)
    assert response.status_code == 500 and 'data-error-page="500"' in response.text
    assert not [marker for marker in TECHNICAL_500 if marker in response.text]
    for path, status in (("/api/v1/no-such-thing", 404), ("/api/v1/raises", 500)):
        response = httpx.get(f"{launched}{path}", timeout=30)
        assert response.status_code == status and response.headers["content-type"] == "application/json"
        assert set(response.json()["error"]) == {"code", "message", "details"}
        assert LEAKED_VALUE not in response.text


@pytest.mark.django_db(transaction=True)  # run beside the sign-in test: see `launched`
def test_the_launched_server_serves_its_static_files_and_only_its_own_names(launched):
    for path, media in (("/static/console/console.css", "text/css"), ("/static/vendor/marked.umd.js", "javascript")):
        response = httpx.get(f"{launched}{path}", timeout=30)
        assert response.status_code == 200 and media in response.headers["content-type"], path
    assert httpx.get(f"{launched}/healthz", headers={"Host": "localhost"}, timeout=30).status_code == 200
    refused = httpx.get(f"{launched}/healthz", headers={"Host": "attacker.example"}, timeout=30)
    assert refused.status_code == 400 and "attacker.example" not in refused.text


@pytest.mark.django_db(transaction=True)
def test_a_member_signs_in_over_plain_http_on_the_launched_server(launched):
    org = factories.organization(name="Acme")
    factories.member(org, "owner", email="self-host@example.com", password="pw-correct-horse-9")
    factories.member(factories.organization(name="Zeta Outsiders"), "owner", email="outsider@example.com")
    with httpx.Client(base_url=launched, timeout=30) as browser:
        form = browser.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token is not None
        signed_in = browser.post("/login/", data={"csrfmiddlewaretoken": token.group(1),
                                                  "username": "self-host@example.com", "password": "pw-correct-horse-9"})
        assert signed_in.status_code == 302 and signed_in.headers["location"] == "/"
        assert "secure" not in signed_in.headers["set-cookie"].lower()
        home = browser.get("/")
        assert home.status_code == 200 and 'class="sidenav"' in home.text and "Acme" in home.text
        assert "Zeta Outsiders" not in home.text
