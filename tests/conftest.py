"""Shared fixtures: real PostgreSQL and Redis (the embedded test servers), and an outsider in every setup."""

from __future__ import annotations

import contextlib
import warnings

import pytest
from celery.contrib.testing.tasks import ping  # registered before the worker starts, or it is unknown to it
from celery.contrib.testing.worker import start_worker
from rest_framework.test import APIClient

from config.celery import app as celery_app
from tests import factories, fastflush, template_db
from tests.browser_servers import _live_servers, _session_chromium  # noqa: F401  (session fixtures, one per process)
from tests.fakes.openai_server import fake_openai  # noqa: F401  (fixture)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, django_db_blocker):
    """pytest-django's hook before it creates the test database: that database is created as a copy of the
    migrated template (tests/template_db.py), not migrated from nothing by every worker."""
    with django_db_blocker.unblock():
        template_db.use_template()
    template_db.drop_test_database_in_background()


@pytest.fixture(autouse=True, scope="session")
def _fast_flush():
    """Transactional tests end with DELETEs of every table instead of a TRUNCATE of all (tests/fastflush.py)."""
    fastflush.install()
    yield
    fastflush.uninstall()


@pytest.fixture(autouse=True, scope="session")
def _url_resolvers_kept():
    """A test that sets ROOT_URLCONF (the console's, the channels', the embeds' and the knowledge conftests do, for
    every test) no longer throws away every URL resolver, as Django's own receiver does on entering and leaving.

    The resolvers are cached per urlconf module name and read that module's `urlpatterns` (imported once, never
    reloaded): a kept resolver is the one a rebuild would make. Rebuilding it — `_populate` of the project's
    ~1,000 routes — was the largest cost of a console test that renders a page (about a third of its time in a
    profile). The per-thread urlconf a request set is still reset, as Django does."""
    from django.core.signals import setting_changed
    from django.test import signals
    from django.urls import set_urlconf

    def urlconf_changed(*, setting, **kwargs):
        if setting == "ROOT_URLCONF":
            set_urlconf(None)

    setting_changed.disconnect(signals.root_urlconf_changed)
    setting_changed.connect(urlconf_changed)
    yield
    setting_changed.disconnect(urlconf_changed)
    setting_changed.connect(signals.root_urlconf_changed)


@pytest.fixture(autouse=True)
def _clean_redis(settings):
    """Rate-limit and dedup counters must not leak between tests."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    yield


class DrivenClock:
    """The rate limiter's clock, driven by the test: it starts one second into a window and moves only when
    told, so a test's hits never straddle a window boundary by chance of the wall clock."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(autouse=True)
def ratelimit_clock(monkeypatch):
    import time

    clock = DrivenClock((int(time.time()) // 3600) * 3600 + 1.0)  # a window start for every window length used
    monkeypatch.setattr("agenticos.ratelimit.clock", clock)
    return clock


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """Each async test has its own event loop; the process-wide channel layer's receive lock belongs to
    the loop that first received on it, so every test starts with a new layer."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def _runs_wait_for_a_worker_only_when_one_is_asked_for(request, monkeypatch):
    """A test without the worker fixtures executes runs itself (agents.runner.execute); the session
    worker an earlier test started must not race it for the same run, nor write during the flush."""
    if not {"celery_worker", "celery_worker_session"} & set(request.fixturenames):
        monkeypatch.setattr("agents.runs.enqueue_run", lambda run_id: None)


@pytest.fixture
def dns(monkeypatch) -> dict[str, list[str]]:
    """The outbound guard's resolver, answered from this table (names not in it do not resolve): a test
    points a name at a private or metadata address without touching the machine's DNS."""
    from agenticos import netguard

    table: dict[str, list[str]] = {}

    async def resolve(hostname: str) -> list[str]:
        if hostname not in table:
            raise ValueError(f"no such host {hostname}")
        return list(table[hostname])

    monkeypatch.setattr(netguard, "resolve", resolve)
    return table


@pytest.fixture
def org(db):
    return factories.organization(name="Acme")


@pytest.fixture
def owner(org):
    return factories.member(org, "owner")


@pytest.fixture
def admin_user(org):
    return factories.member(org, "admin")


@pytest.fixture
def builder(org):
    return factories.member(org, "builder")


@pytest.fixture
def member(org):
    return factories.member(org, "member")


@pytest.fixture
def viewer(org):
    return factories.member(org, "viewer")


@pytest.fixture
def outsider_org(db):
    return factories.organization(name="Other Corp")


@pytest.fixture
def outsider(outsider_org):
    return factories.member(outsider_org, "owner")


def _client_for(user, org=None) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    if org is not None:
        client.credentials(HTTP_X_ORGANIZATION_ID=str(org.pk))
    return client


@pytest.fixture
def api_as():
    return _client_for


def _thread_stacks() -> str:
    """The project's frames of every live thread: where a stuck worker is stuck."""
    import sys
    import traceback

    stacks = []
    for ident, frame in sys._current_frames().items():
        ours = [line for line in traceback.format_stack(frame) if "/site-packages/" not in line]
        if ours:
            stacks.append(f"thread {ident}:\n" + "".join(ours[-4:]))
    return "\n".join(stacks)[:4000]


def _runs_diagnosis() -> str:
    """Where the runs of this process stand: every thread's stack, every task on the runs loop (what each
    run awaits), the ORM threads' backlog, the connection pool, the loop's recorded stalls and the rows of
    unfinished runs. Attached to a failed test that used the worker, and kept in
    test-artifacts/runs-diagnosis.txt (`make test` prints its end when the suite fails)."""
    import asyncio
    import io
    import sys
    import threading
    import traceback

    out = io.StringIO()
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.write(f"--- thread {names.get(ident, ident)}\n")
        out.write("".join(traceback.format_stack(frame)[-12:]))
    from agents import run_handle
    from agents.runner import loop

    runs = loop.started_loop()
    if runs is not None:
        out.write(f"--- runs loop: admitted={runs.admitted} live={list(runs.live)} blocked={len(runs.blocked)}\n")
        for stall in list(runs.blocked)[-3:]:
            out.write(f"stalled {stall.seconds:.1f} s at:\n{stall.stack[-1500:]}\n")
        for _attempt in range(3):
            try:
                tasks = list(asyncio.all_tasks(runs.loop))
                break
            except RuntimeError:  # the set changed while it was read from this thread
                tasks = []
        for task in tasks:
            stack = io.StringIO()
            task.print_stack(limit=12, file=stack)
            out.write(f"--- task {task.get_name()}\n{stack.getvalue()[-2500:]}")
    pool = run_handle._db_pool
    if pool is not None:
        out.write(f"--- run-db threads: {len(pool._threads)}, queued work: {pool._work_queue.qsize()}\n")
    try:
        from django.db import connection

        db_pool = getattr(connection, "pool", None)
        if db_pool is not None:
            out.write(f"--- connection pool: {db_pool.get_stats()}\n")
        from agents.models import Run

        rows = list(Run.objects.exclude(status__in=["completed"]).values_list(
            "pk", "status", "surface", "created_at", "started_at", "heartbeat_at", "error"))
        out.write(f"--- runs not completed: {rows}\n")
    except Exception as exc:  # noqa: BLE001  (a diagnosis must not hide the failure it describes)
        out.write(f"--- database unreadable: {exc!r}\n")
    return out.getvalue()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or "celery_worker" not in getattr(item, "fixturenames", ()):
        return
    from pathlib import Path

    text = _runs_diagnosis()
    report.sections.append(("runs diagnosis", text))
    artifacts = Path(__file__).resolve().parents[1] / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    with open(artifacts / "runs-diagnosis.txt", "a") as diagnosis:
        diagnosis.write(f"===== {item.nodeid}\n{text}\n")


class _SessionWorker:
    """One real worker consuming `runs`, `default` and `cpu` for the whole session. Before each test that needs
    it, it must answer a ping; when it does not, the warning (in the summary CI prints) says where its
    threads are stuck — otherwise a later test would only see a bare timeout."""

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self.worker = None

    running: _SessionWorker | None = None

    def start(self) -> None:
        # Two workers in one process share the app's broker connections and one of them goes deaf without a
        # word: runs stay queued (a sub-conftest re-exporting the session fixture once started a second one).
        if _SessionWorker.running is not None:
            raise RuntimeError("a session worker is already running in this process; request the fixture "
                               "from tests/conftest.py, do not re-export it from another conftest")
        _SessionWorker.running = self
        self._stack = contextlib.ExitStack()
        self.worker = self._stack.enter_context(start_worker(
            celery_app,
            pool="threads",
            concurrency=16,
            perform_ping_check=False,
            queues=["runs", "default", "cpu"],  # cpu: knowledge ingestion, as docker-compose's worker
            loglevel="WARNING",
            shutdown_timeout=20,
        ))

    def stop(self) -> None:
        if self._stack is None:
            return
        _SessionWorker.running = None
        try:
            self._stack.close()
        except RuntimeError as exc:  # threads still busy after shutdown_timeout
            warnings.warn(f"the test worker did not stop: {exc}\n{_thread_stacks()}", stacklevel=1)
        self._stack = None

    def check_answering(self) -> None:
        try:
            answered = ping.apply_async(queue="runs").get(timeout=15) == "pong"
        except Exception:  # noqa: BLE001  (a timeout or a broker error: either way, not answering)
            answered = False
        if not answered:
            warnings.warn(f"the test worker did not answer a ping within 15 s\n{_thread_stacks()}", stacklevel=1)


@pytest.fixture(scope="session")
def celery_worker_session(django_db_setup, django_db_blocker):
    celery_app.conf.task_always_eager = False
    with django_db_blocker.unblock():
        session_worker = _SessionWorker()
        session_worker.start()
        try:
            yield session_worker
        finally:
            session_worker.stop()


@pytest.fixture
def celery_worker(celery_worker_session, transactional_db):
    celery_worker_session.check_answering()
    yield celery_worker_session.worker
    # The test database is flushed (TRUNCATE) right after this teardown: a run still writing would
    # deadlock with it, so let the runs this test started finish first.
    import time

    from celery.worker import state as worker_state

    from agents.models import Run
    from channelbots import follows

    def busy() -> bool:
        # The test's runs, any task still working for it, and a channel reply still following its run on the
        # follows loop (the task that handed it over has returned).
        loop = follows.started_loop()
        return (bool(worker_state.active_requests) or bool(loop and loop.admitted)
                or Run.objects.filter(status__in=["queued", "running"]).exists())

    # A bound for a loaded machine, where a run's last writes can trail the test's last assertion by seconds;
    # the wait ends as soon as nothing is busy.
    deadline = time.monotonic() + RUNS_SETTLE_SECONDS
    while time.monotonic() < deadline and busy():
        time.sleep(0.1)
    unfinished = list(Run.objects.filter(status__in=["queued", "running"]).values_list("pk", "status"))
    if unfinished:
        # The test that left them fails (an error in its teardown), saying where they are stuck; as a warning
        # it passed, and a later test failed on what it left behind, with only a timeout to show.
        pytest.fail(f"runs unfinished {RUNS_SETTLE_SECONDS} s after the test: {unfinished}\n{_thread_stacks()}",
                    pytrace=False)


RUNS_SETTLE_SECONDS = 60


@pytest.fixture
def scripted_model(monkeypatch):
    """Replace the provider's model with a FunctionModel for every run this test starts."""

    def install(model):
        monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: model)
        return model

    return install
