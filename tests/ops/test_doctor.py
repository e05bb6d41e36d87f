"""`manage.py doctor`: one OK/FAIL line per dependency, the fix on every FAIL, exit code 1 on any FAIL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agents.models import ModelProfile
from tests.fakes.live_daphne import test_database_url
from tests.ops import world

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^(OK (?P<ok>[a-z ]+): .+|FAIL (?P<fail>[a-z ]+): .+ — fix: .+)$")
NAMES = ["database", "pgvector", "redis", "vault key", "celery worker", "model"]


def doctor(*args: str) -> tuple[dict[str, str], int]:
    out = StringIO()
    code = 0
    try:
        call_command("doctor", "--timeout", "0.5", *args, stdout=out, no_color=True)
    except CommandError as exc:
        code = exc.returncode
    lines = out.getvalue().splitlines()
    for line in lines:
        assert LINE.match(line), line
    return {line.split(": ", 1)[0].split(" ", 1)[1]: line for line in lines}, code


@pytest.fixture
def no_worker_listens(settings):
    """The session's Celery worker consumes this process's broker once any earlier test here needed it: the doctor
    is asked, as on a machine without a worker, through a Celery app on a broker database nobody consumes (this
    worker's counters database, which no Celery process uses)."""
    from celery import Celery, current_app

    from config.settings import _celery_redis_url

    project = current_app._get_current_object()
    lonely = Celery("doctor-without-a-worker", broker=_celery_redis_url(settings.REDIS_URL), set_as_current=False)
    lonely.conf.broker_transport_options = {"global_keyprefix": "doctor-without-a-worker:"}
    lonely.set_current()
    try:
        yield
    finally:
        project.set_current()
        lonely.close()


def test_without_a_worker_or_a_model_the_doctor_fails_and_says_how_to_fix_it(db, no_worker_listens):
    lines, code = doctor()
    assert list(lines) == NAMES
    assert code == 1
    assert lines["database"] == "OK database: ok"
    assert lines["pgvector"].startswith("OK pgvector: vector 0.")
    assert lines["redis"] == "OK redis: ok"
    assert lines["vault key"].startswith("OK vault key: key version 1 seals and opens")
    assert lines["celery worker"].startswith("FAIL celery worker: no worker answered within 0.5s — fix: start one:")
    assert "celery -A config worker" in lines["celery worker"]
    assert lines["model"].startswith("FAIL model: no chat model profile exists — fix: run `manage.py platform_bootstrap`")


def test_the_demo_profile_counts_as_a_runnable_model_but_a_keyless_openai_one_does_not(org):
    ModelProfile.objects.create(organization=org, label="No key", provider="openai", model="gpt-4o")
    lines, _ = doctor()
    assert lines["model"].startswith("FAIL model: 1 chat profile(s), none with the key or base URL it needs")
    ModelProfile.objects.create(organization=org, label="Demo", provider="demo", model="demo")
    lines, _ = doctor()
    assert lines["model"] == "OK model: 1 runnable chat profile(s) (demo)"


def test_when_redis_is_down_the_doctor_fails_redis_and_skips_the_worker(db, settings, tmp_path):
    settings.REDIS_URL = f"unix://{tmp_path}/nobody-listens.sock"
    lines, code = doctor()
    assert code == 1
    assert lines["redis"].startswith("FAIL redis: ConnectionError — fix: start Redis")
    assert lines["celery worker"] == "FAIL celery worker: skipped: Redis (the broker) is down — fix: fix Redis first"


def test_a_short_vault_key_fails(db, settings):
    settings.VAULT_MASTER_KEY = "short"
    lines, _ = doctor()
    assert lines["vault key"].startswith("FAIL vault key: VAULT_MASTER_KEY is too short (5 characters) — fix: set VAULT_MASTER_KEY")


def test_secrets_sealed_with_a_key_that_is_no_longer_configured_fail_the_vault_check(org, settings):
    world.secret(org, "sk-sealed-with-v1-0123456789")
    settings.VAULT_KEY_VERSION = 2
    settings.VAULT_PREVIOUS_KEYS = {}
    lines, _ = doctor()
    assert lines["vault key"].startswith("FAIL vault key: secrets sealed with key version(s) [1] have no configured master key")
    assert "vault_rewrap" in lines["vault key"]


# ------------------------------------------------------------------ the real command, with a real worker


@pytest.fixture
def subprocess_env(settings) -> dict[str, str]:
    env = dict(os.environ)
    env["DATABASE_URL"] = test_database_url()  # the test database, which holds the committed demo profile
    env["REDIS_URL"] = settings.REDIS_URL
    env.pop("PYTEST_XDIST_WORKER", None)  # REDIS_URL already names this worker's Redis database
    env["REDIS_NAMESPACE"] = settings.REDIS_NAMESPACE  # and this keeps its pub/sub apart from other workers'
    env["AGENTICOS_TESTING"] = "true"
    return env


class WorkerProcess:
    """A real Celery worker process on this test's Redis database; `ready()` once it consumes."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "runs,default,cpu", "-P",
                    "threads", "-c", "2", "--without-mingle", "--without-gossip", "-l", "INFO",
                    "-n", f"doctor-test-{os.getpid()}@%h",
                ],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def ready(self) -> bool:
        """Celery logs "ready." once its consumer is up: asking the doctor before would only start another
        process (seconds of imports) to be told no worker answered yet."""
        return " ready." in self.log_path.read_text()

    def poll(self) -> int | None:
        return self.process.poll()

    def output(self) -> str:
        return self.log_path.read_text()


@pytest.fixture
def celery_worker(subprocess_env, tmp_path):
    """Stopped (by its pid) at the end."""
    worker = WorkerProcess(subprocess_env, tmp_path / "worker.log")
    proc = worker.process
    yield worker
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def run_doctor(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "doctor", "--timeout", "1", "--no-color"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )


@pytest.mark.django_db(transaction=True)
def test_the_command_exits_1_without_a_worker_and_0_once_a_worker_answers(subprocess_env, request):
    org = world.factories.organization("Doctor")
    ModelProfile.objects.create(organization=org, label="Demo", provider="demo", model="demo")

    failing = run_doctor(subprocess_env)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "FAIL celery worker: no worker answered within 1s — fix:" in failing.stdout
    assert "1 check(s) failed: celery worker" in failing.stderr

    worker = request.getfixturevalue("celery_worker")
    deadline = time.monotonic() + 90
    while not worker.ready() and worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert worker.ready(), worker.output()
    result = run_doctor(subprocess_env)
    while result.returncode != 0 and time.monotonic() < deadline and worker.poll() is None:
        time.sleep(1)
        result = run_doctor(subprocess_env)
    assert result.returncode == 0, result.stdout + result.stderr + worker.output()
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"OK {name}" for name in NAMES]
    assert "worker(s) answering: doctor-test-" in result.stdout
