"""Builder → Evaluations → Replays (issue 41): an editor starts a replay set with the form and sets the replay
gate; a replay reads side by side (answers, tool calls same / different / new / missing, tokens and cost before
and after, the verdict) and follows its progress; a viewer reads without controls and is refused; an outsider
gets 404 and nothing changes. Then the page in a real browser at 1440 and 390 px."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agenticos.models import Membership
from agents.models import Conversation, Environment, Run
from evals.models import ReplayGate, ReplayResult, ReplaySet, RunTag
from tests import factories
from tests.api.state import changed_tables, database_state
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

TABLES = ("evals.ReplaySet", "evals.ReplayResult", "evals.ReplayGate", "evals.RunTag", "agenticos.AuditEvent")


def _recorded(agent, owner, output: str = "Ada is a customer.") -> Run:
    version = Environment.objects.get(agent=agent, name="production").version
    conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner=owner, title="t")
    return Run.objects.create(organization=agent.organization, agent=agent, version=version, surface="web",
                              user=owner, conversation=conversation, prompt="Who is Ada?", output=output,
                              status="completed", input_tokens=100, output_tokens=20, cost_usd=Decimal("0.002"))


def _finished_replay(agent, owner) -> ReplaySet:
    """A replay set as the driver leaves it: one run replayed, its answer and tool use changed, failed."""
    run = _recorded(agent, owner)
    version = Environment.objects.get(agent=agent, name="production").version
    replay_set = ReplaySet.objects.create(
        organization=agent.organization, agent=agent, target="draft", version=version, cap_usd=Decimal("1"),
        status=ReplaySet.Status.COMPLETED, started_by=owner, total=1, done=1, changed_answers=1, changed_tools=1,
        failed=1, recorded_cost_usd=Decimal("0.002"), replayed_cost_usd=Decimal("0.003"), recorded_tokens=120,
        replayed_tokens=150, checks=[{"kind": "contains", "value": "customer"}])
    ReplayResult.objects.create(
        replay_set=replay_set, original=run, status=ReplayResult.Status.DONE, recorded_output=run.output,
        replayed_output="I could not look her up.", answer_changed=True, tools_changed=True, verdict="failed",
        tool_calls=[
            {"tool_name": "lookup_contact", "verdict": "different_arguments", "recorded_args": {"name": "Ada"},
             "replayed_args": {"name": "Lovelace"}, "answered_by": "refused"},
            {"tool_name": "send_email", "verdict": "missing", "recorded_args": {"to": "a@b.c"},
             "replayed_args": None, "answered_by": ""}],
        checks=[{"index": 0, "kind": "contains", "label": "contains 'customer'", "passed": False,
                 "reason": "The answer does not contain 'customer'."}],
        recorded_input_tokens=100, recorded_output_tokens=20, recorded_cost_usd=Decimal("0.002"),
        replayed_input_tokens=120, replayed_output_tokens=30, replayed_cost_usd=Decimal("0.003"))
    return replay_set


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, name="Helper")


@pytest.fixture
def no_worker(monkeypatch):
    started: list[str] = []
    monkeypatch.setattr("evals.tasks.run_replay_set.delay", started.append)
    return started


@pytest.mark.django_db(transaction=True)
def test_an_editor_starts_a_replay_with_the_form_and_follows_it(client_as, org, owner, agent, no_worker):
    run = _recorded(agent, owner)
    client = client_as(owner, org)
    evals_tab = client.get(f"/agents/{agent.pk}/evals/").content.decode()
    assert f'href="/agents/{agent.pk}/replays/"' in evals_tab
    page = client.get(f"/agents/{agent.pk}/replays/").content.decode()
    assert "data-replay-form" in page and "data-replay-gate-form" in page

    started = client.post(f"/agents/{agent.pk}/replays/", {
        "target": "draft", "feedback": "down_first", "last": "20", "on_mismatch": "refuse", "cap_usd": "0.5"})

    replay_set = ReplaySet.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/agents/{agent.pk}/replays/{replay_set.pk}/"
    assert replay_set.selection == {"feedback": "down_first", "last": 20} and replay_set.cap_usd == Decimal("0.5")
    assert replay_set.results.get().original_id == run.pk and no_worker == [str(replay_set.pk)]
    detail = client.get(started["Location"]).content.decode()
    assert "Queued — 0 of 1 runs replayed" in detail and "data-refresh-url" in detail and "data-replay-cancel" in detail
    fragment = client.get(started["Location"], headers={"X-Fragment": "true"}).content.decode()
    assert fragment.lstrip().startswith("<div data-replay-results")

    bad = client.post(f"/agents/{agent.pk}/replays/", {"target": "draft", "last": "0", "feedback": "sideways"})
    assert bad.status_code == 422 and "data-replay-error" in bad.content.decode()
    assert ReplaySet.objects.count() == 1


@pytest.mark.django_db
def test_a_finished_replay_reads_side_by_side(client_as, org, owner, agent):
    replay_set = _finished_replay(agent, owner)
    page = client_as(owner, org).get(f"/agents/{agent.pk}/replays/{replay_set.pk}/").content.decode()

    assert "Completed — 1 of 1 runs replayed" in page and "1 changed answers, 1 changed tool use" in page
    assert "data-refresh-url" not in page  # finished: nothing to follow
    assert "Ada is a customer." in page and "I could not look her up." in page
    assert 'data-tool-verdict="different_arguments"' in page and "different arguments" in page
    assert 'data-tool-verdict="missing"' in page and "refused" in page
    assert "Tokens 120 → 150" in page and "$0.0020 → $0.0030" in page
    assert 'data-verdict="failed"' in page and "The answer does not contain &#x27;customer&#x27;." in page


@pytest.mark.django_db
def test_an_editor_sets_and_removes_the_replay_gate(client_as, org, owner, agent):
    client = client_as(owner, org)
    assert client.post(f"/agents/{agent.pk}/replays/gate", {"runs": "30", "max_failed": "2", "cap_usd": "3"}
                       ).status_code == 302
    gate = ReplayGate.objects.get(agent=agent)
    assert (gate.runs, gate.max_failed, gate.cap_usd) == (30, 2, Decimal("3"))
    assert "Publishing replays the newest 30 recorded runs" in client.get(f"/agents/{agent.pk}/replays/").content.decode()
    assert client.post(f"/agents/{agent.pk}/replays/gate", {"runs": "500"}).status_code == 422
    assert client.post(f"/agents/{agent.pk}/replays/gate", {"remove": "1"}).status_code == 302
    assert not ReplayGate.objects.exists()


@pytest.mark.django_db
def test_an_editor_tags_recorded_runs_and_replays_the_runs_of_a_tag(client_as, org, owner, agent, no_worker):
    tagged, other = _recorded(agent, owner), _recorded(agent, owner, output="Other.")
    client = client_as(owner, org)
    page = client.get(f"/agents/{agent.pk}/replays/").content.decode()
    assert f'data-recorded-run="{tagged.pk}"' in page and "data-tag-form" in page

    saved = client.post(f"/agents/{agent.pk}/replays/runs/{tagged.pk}/tags", {"tags": "Refunds, edge-case"})

    assert saved.status_code == 302
    assert sorted(RunTag.objects.filter(run=tagged).values_list("name", flat=True)) == ["edge-case", "refunds"]
    page = client.get(f"/agents/{agent.pk}/replays/").content.decode()
    assert '<option value="refunds">refunds (1 run)</option>' in page and 'value="edge-case refunds"' in page
    bad = client.post(f"/agents/{agent.pk}/replays/runs/{other.pk}/tags", {"tags": "a/b"})
    assert bad.status_code == 422 and "data-replay-error" in bad.content.decode()
    assert not RunTag.objects.filter(run=other).exists()

    client.post(f"/agents/{agent.pk}/replays/", {"target": "draft", "tag": "refunds", "cap_usd": "0.5"})

    replay_set = ReplaySet.objects.get()
    assert replay_set.selection == {"tag": "refunds"} and replay_set.results.get().original_id == tagged.pk


@pytest.mark.django_db
def test_a_viewer_reads_without_controls_and_is_refused(client_as, org, owner, agent, viewer):
    replay_set = _finished_replay(agent, owner)
    client = client_as(viewer, org)
    listed = client.get(f"/agents/{agent.pk}/replays/").content.decode()
    assert "read only" in listed and "data-replay-form" not in listed and "data-replay-gate-form" not in listed
    assert f'data-replay-set="{replay_set.pk}"' in listed
    ReplaySet.objects.filter(pk=replay_set.pk).update(status=ReplaySet.Status.RUNNING)
    detail = client.get(f"/agents/{agent.pk}/replays/{replay_set.pk}/").content.decode()
    assert "data-replay-cancel" not in detail
    # The replayed run is the owner's, which a viewer may not read: its verdict and counts, not its words.
    assert "data-redacted" in detail and 'data-verdict="failed"' in detail
    assert "I could not look her up." not in detail and "Ada is a customer." not in detail
    assert "Lovelace" not in detail and "Hidden: the recorded run is not one you may read." in detail
    before = database_state(TABLES)
    assert client.post(f"/agents/{agent.pk}/replays/", {"target": "draft"}).status_code == 403
    assert client.post(f"/agents/{agent.pk}/replays/gate", {"runs": "5"}).status_code == 403
    assert client.post(f"/agents/{agent.pk}/replays/{replay_set.pk}/cancel").status_code == 403
    run_id = replay_set.results.get().original_id
    assert client.post(f"/agents/{agent.pk}/replays/runs/{run_id}/tags", {"tags": "mine"}).status_code == 403
    assert changed_tables(before, database_state(TABLES)) == []


@pytest.mark.django_db
def test_an_outsider_gets_404_and_nothing_changes(client_as, org, owner, agent, outsider, outsider_org):
    replay_set = _finished_replay(agent, owner)
    ReplaySet.objects.filter(pk=replay_set.pk).update(status=ReplaySet.Status.RUNNING)
    client = client_as(outsider, outsider_org)
    own = factories.published_agent(outsider_org, outsider, name="Theirs")
    before = database_state(TABLES)
    assert client.get(f"/agents/{agent.pk}/replays/").status_code == 404
    assert client.get(f"/agents/{agent.pk}/replays/{replay_set.pk}/").status_code == 404
    assert client.post(f"/agents/{agent.pk}/replays/", {"target": "draft"}).status_code == 404
    assert client.post(f"/agents/{agent.pk}/replays/gate", {"runs": "5"}).status_code == 404
    assert client.post(f"/agents/{agent.pk}/replays/{replay_set.pk}/cancel").status_code == 404
    # Their own agent does not reach this organization's replay either.
    assert client.get(f"/agents/{own.pk}/replays/{replay_set.pk}/").status_code == 404
    assert client.post(f"/agents/{own.pk}/replays/{replay_set.pk}/cancel").status_code == 404
    run_id = replay_set.results.get().original_id
    assert client.post(f"/agents/{agent.pk}/replays/runs/{run_id}/tags", {"tags": "x"}).status_code == 404
    assert client.post(f"/agents/{own.pk}/replays/runs/{run_id}/tags", {"tags": "x"}).status_code == 404
    assert changed_tables(before, database_state(TABLES)) == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
def test_the_replays_tab_in_a_browser(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Helper")
    finished = _finished_replay(agent, owner)
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(30_000)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com")

    page.goto(f"{live_server_url}/agents/{agent.pk}/evals/")
    page.get_by_role("link", name="Replays").click()
    page.wait_for_selector("[data-replay-form]")
    page.get_by_label("By feedback").select_option("down_first")
    page.get_by_label("The newest", exact=True).fill("5")
    page.get_by_role("button", name="Start the replay").click()
    page.wait_for_selector("[data-replay-progress]")
    assert "0 of 1 runs replayed" in page.locator("[data-replay-progress]").inner_text()
    started = ReplaySet.objects.exclude(pk=finished.pk).get()
    assert started.selection == {"feedback": "down_first", "last": 5}
    # The live server's worker drives it: the page follows it (refresh.js) until it has ended — cancelled, or
    # completed when its one run finished before the cancel was read.
    page.get_by_role("button", name="Cancel the replay").click()
    page.wait_for_function("() => /^(Cancelled|Completed)/.test("
                           "document.querySelector('[data-replay-progress]').textContent.trim())")
    assert page.locator("[data-replay-results]").get_attribute("data-refresh-url") is None

    page.goto(f"{live_server_url}/agents/{agent.pk}/replays/{finished.pk}/")
    run = page.locator("[data-replay-run]")
    assert "different arguments" in run.inner_text() and "missing" in run.inner_text()
    assert "I could not look her up." in run.locator("[data-replayed-answer]").inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"replay-{width}.png"), full_page=True)
    assert problems == [], problems
