"""Each retention sweep removes what it must and nothing else: a kept row next to each deleted one, an
organization's own value against the deployment default, two organizations with different values. The spend
ledger and the run rows' totals are never touched."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from agenticos.models import AuditEvent
from agents.models import Conversation, Message, Run, RunStatus, ToolCall
from governance import retention
from governance.models import RetentionPolicy, SpendEntry
from tests import factories
from tests.governance.helpers import conversation, turn
from workspaces.models import Workspace, WorkspaceFile

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def days_ago(n: float):
    return NOW - timedelta(days=n)


def policy(org, **values):
    return RetentionPolicy.objects.create(organization=org, **values)


def sweep_transcripts() -> tuple[int, int, int]:
    return (retention.sweep_transcript_messages(NOW), retention.sweep_tool_calls(NOW), retention.sweep_run_texts(NOW))


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


def test_transcripts_are_kept_when_neither_the_organization_nor_the_deployment_sets_a_period(org, owner, agent,
                                                                                             settings):
    settings.RETENTION_TRANSCRIPT_DAYS = 0
    run, *_ = turn(conversation(agent, owner), at=days_ago(3000))
    assert sweep_transcripts() == (0, 0, 0)
    assert Message.objects.count() == 2 and ToolCall.objects.count() == 1
    assert Run.objects.get(pk=run.pk).prompt == "what the person asked"


def test_an_organizations_period_removes_old_transcripts_and_keeps_the_run_its_totals_and_the_spend(org, owner,
                                                                                                   agent):
    policy(org, transcript_days=30)
    chat = conversation(agent, owner)
    old_run, *_ = turn(chat, at=days_ago(31))
    fresh_run, fresh_asked, fresh_answer, fresh_call = turn(chat, at=days_ago(29))
    SpendEntry.objects.create(organization=org, agent=agent, run=old_run, cost_usd=Decimal("0.0125"),
                              input_tokens=120, output_tokens=45, created_at=days_ago(31))

    assert sweep_transcripts() == (2, 1, 1)

    assert set(Message.objects.values_list("pk", flat=True)) == {fresh_asked.pk, fresh_answer.pk}
    assert list(ToolCall.objects.values_list("pk", flat=True)) == [fresh_call.pk]
    old = Run.objects.get(pk=old_run.pk)  # the run stays in the ledger, without its words
    assert (old.prompt, old.output, old.parked_state) == ("", "", None)
    assert old.options == {"history_limit": 20}
    assert (old.status, old.input_tokens, old.output_tokens, old.cost_usd) == (
        RunStatus.COMPLETED, 120, 45, Decimal("0.0125"))
    fresh = Run.objects.get(pk=fresh_run.pk)
    assert (fresh.prompt, fresh.output) == ("what the person asked", "what the agent answered")
    assert fresh.options["recorded_prompt"] == "what the person asked"
    spend = SpendEntry.objects.get()
    assert spend.run_id == old_run.pk and spend.cost_usd == Decimal("0.0125")
    assert sweep_transcripts() == (0, 0, 0)  # idempotent


def test_a_run_still_waiting_for_a_person_keeps_what_it_resumes_from(org, owner, agent):
    policy(org, transcript_days=1)
    parked, *_ = turn(conversation(agent, owner), at=days_ago(2), status=RunStatus.AWAITING_APPROVAL)
    Run.objects.filter(pk=parked.pk).update(parked_state=[{"kind": "request"}])
    done, *_ = turn(conversation(agent, owner), at=days_ago(2))
    assert sweep_transcripts() == (2, 1, 1)
    assert set(Message.objects.values_list("run_id", flat=True)) == {parked.pk}
    assert list(ToolCall.objects.values_list("run_id", flat=True)) == [parked.pk]
    assert Run.objects.get(pk=parked.pk).parked_state == [{"kind": "request"}]
    assert Run.objects.get(pk=done.pk).prompt == ""


def test_two_organizations_with_their_own_values_and_a_third_on_the_deployment_default(org, owner, agent,
                                                                                      outsider_org, outsider,
                                                                                      settings):
    settings.RETENTION_TRANSCRIPT_DAYS = 100
    third_org = factories.organization(name="Third")
    third_owner = factories.member(third_org, "owner")
    policy(org, transcript_days=30)
    policy(outsider_org, transcript_days=0)  # keep, whatever the deployment says
    RetentionPolicy.objects.create(organization=third_org, audit_log_days=50)  # transcripts: the default
    chats = {
        "short": conversation(agent, owner),
        "keep": conversation(factories.published_agent(outsider_org, outsider), outsider),
        "default": conversation(factories.published_agent(third_org, third_owner), third_owner),
    }
    for chat in chats.values():
        turn(chat, at=days_ago(50))
        turn(chat, at=days_ago(150))

    retention.sweep_all(NOW)

    left = {name: sorted(round((NOW - m.created_at).days) for m in Message.objects.filter(conversation=chat))
            for name, chat in chats.items()}
    assert left == {"short": [], "keep": [50, 50, 150, 150], "default": [50, 50]}
    calls = {name: ToolCall.objects.filter(run__conversation=chat).count() for name, chat in chats.items()}
    assert calls == {"short": 0, "keep": 2, "default": 1}


def test_the_audit_log_follows_each_organizations_value_or_the_default(org, outsider_org, settings):
    settings.RETENTION_AUDIT_DAYS = 400
    third_org = factories.organization(name="Third")
    policy(org, audit_log_days=60)
    policy(third_org, audit_log_days=0)

    def event(organization, age):
        return AuditEvent.objects.create(organization=organization, action="x", created_at=days_ago(age)).pk

    gone = {event(org, 61), event(outsider_org, 401), event(None, 401)}
    kept = {event(org, 59), event(outsider_org, 61), event(outsider_org, 399), event(None, 61),
            event(third_org, 5000)}
    assert retention.sweep_audit_log(NOW) == len(gone)
    assert set(AuditEvent.objects.values_list("pk", flat=True)) == kept
    assert retention.sweep_audit_log(NOW) == 0


def test_idle_shared_workspaces_follow_each_organizations_value(org, owner, agent, outsider_org, outsider,
                                                                 settings):
    settings.RETENTION_WORKSPACE_IDLE_DAYS = 90
    policy(org, idle_workspace_days=10)
    foreign_agent = factories.published_agent(outsider_org, outsider)

    def workspace(agent_row, scope, age):
        ws = Workspace.objects.create(organization_id=agent_row.organization_id, agent=agent_row, scope=scope,
                                      key=f"{scope}-{age}", last_used_at=days_ago(age))
        WorkspaceFile.objects.create(workspace=ws, path="/workspace/a.txt", data=b"x", size=1)
        return ws.pk

    gone = {workspace(agent, "user", 11), workspace(agent, "agent", 11), workspace(foreign_agent, "channel", 91)}
    kept = {workspace(agent, "user", 9), workspace(agent, "conversation", 500), workspace(foreign_agent, "user", 11)}
    assert retention.sweep_idle_workspaces(NOW) == 3
    assert set(Workspace.objects.values_list("pk", flat=True)) == kept and not gone & kept
    assert WorkspaceFile.objects.count() == 3


def test_a_workspace_period_of_zero_keeps_idle_workspaces(org, owner, agent):
    policy(org, idle_workspace_days=0)
    Workspace.objects.create(organization=org, agent=agent, scope="user", key="u", last_used_at=days_ago(5000))
    assert retention.sweep_idle_workspaces(NOW) == 0
    assert Workspace.objects.count() == 1


def test_the_sweeps_report_what_each_removed_and_log_under_which_value(org, owner, agent, caplog):
    policy(org, transcript_days=5)
    chat = conversation(agent, owner)
    turn(chat, at=days_ago(6))
    Conversation.objects.filter(pk=chat.pk).update(last_active_at=days_ago(6))
    with caplog.at_level("INFO", logger="governance.retention"):
        removed = retention.sweep_all(NOW)
    assert removed == {"audit_log": 0, "idle_workspaces": 0, "transcript_messages": 2, "tool_calls": 1,
                       "run_texts": 1, "emptied_conversations": 1, "removed_files": 0, "expired_link_requests": 0,
                       "generated_media": 0, "compacted_histories": 0,
                       "unsent_chat_uploads": 0, "replay_results": 0}
    assert "retention transcript_messages: removed 2 older than 5 days (organization value)" in caplog.text


def test_a_conversation_left_without_messages_loses_its_title_and_keeps_its_runs(org, owner, agent):
    policy(org, transcript_days=30)
    emptied = conversation(agent, owner, title="my salary negotiation")
    run, *_ = turn(emptied, at=days_ago(40))
    mixed = conversation(agent, owner, title="still talking")
    turn(mixed, at=days_ago(40))
    turn(mixed, at=days_ago(1))
    recent = conversation(agent, owner, title="quiet but recent")
    Conversation.objects.filter(pk__in=[emptied.pk, mixed.pk]).update(last_active_at=days_ago(40))
    Conversation.objects.filter(pk=recent.pk).update(last_active_at=days_ago(1))

    retention.sweep_transcript_messages(NOW)
    assert retention.sweep_emptied_conversations(NOW) == 1

    titles = dict(Conversation.objects.values_list("pk", "title"))
    assert titles == {emptied.pk: "", mixed.pk: "still talking", recent.pk: "quiet but recent"}
    assert Run.objects.filter(pk=run.pk, conversation=emptied).exists()
    assert retention.sweep_emptied_conversations(NOW) == 0
