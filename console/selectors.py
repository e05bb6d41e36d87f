"""Reads for the console screens, each list in a fixed number of queries (no N+1)."""

from __future__ import annotations

import functools
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Case, CharField, Count, Exists, F, Func, OuterRef, Q, QuerySet, Sum, When
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext

from agenticos.tenancy import Actor
from agents import branches
from agents.models import Agent, Conversation, Environment, Feedback, Message, Run, Surface, ToolCall
from agents.runner.frames import context_usage
from agents.uploads import public_attachments
from governance import budgets
from governance.grants import EDIT, PUBLISH, USE, at_least, grant_levels, role_level, stronger, visible_agents
from governance.models import Approval, Question, SpendEntry

PRODUCTION = "production"


# ------------------------------------------------------------------ agents


def agents_with_access(actor: Actor) -> list[tuple[Agent, str]]:
    """Every agent the actor can see with their effective level, in two queries."""
    agents = list(visible_agents(actor).select_related("owner").order_by("name"))
    grants = grant_levels(actor.user_id, [a.pk for a in agents])
    result = []
    for agent in agents:
        level = stronger(role_level(actor, agent), grants.get(str(agent.pk)))
        if level is not None:
            result.append((agent, level))
    return result


def production_versions(agent_ids: list[Any]) -> dict[str, Environment]:
    envs = Environment.objects.filter(agent_id__in=agent_ids, name=PRODUCTION).select_related("version")
    return {str(env.agent_id): env for env in envs}


def agent_rows(actor: Actor) -> list[dict[str, Any]]:
    pairs = agents_with_access(actor)
    production = production_versions([a.pk for a, _ in pairs])
    spent = agent_spend_this_month(actor)
    rows = []
    for agent, level in pairs:
        env = production.get(str(agent.pk))
        rows.append({
            "agent": agent,
            "level": level,
            "can_edit": at_least(level, EDIT) and actor.has("agents:edit"),
            "can_use": at_least(level, USE) and actor.has("agents:run"),
            "version": env.version.number if env else None,
            "budget": ((env.version.spec if env else agent.draft_spec).get("budget") or {}).get("monthly_usd"),
            "spent": spent.get(str(agent.pk), Decimal("0")),
        })
    return rows


def chat_agents(actor: Actor) -> list[dict[str, Any]]:
    """Agents the actor may chat with: published, with use access. Includes each agent's budget state."""
    if not actor.has("agents:run"):
        return []
    pairs = [(a, lvl) for a, lvl in agents_with_access(actor) if at_least(lvl, USE)]
    production = production_versions([a.pk for a, _ in pairs])
    spent = agent_spend_this_month(actor)
    result = []
    for agent, level in pairs:
        env = production.get(str(agent.pk))
        if env is None:
            continue
        cap = (env.version.spec.get("budget") or {}).get("monthly_usd")
        result.append({
            "id": str(agent.pk),
            "name": agent.name,
            "version": env.version.number,
            # Whether a missing-capability card offers "Enable it" (agents.capability_card.can_enable), also on a
            # card drawn again from a reopened conversation, whose call does not say.
            "can_edit": at_least(level, EDIT),
            # Prompts a person clicks to start an empty chat (the spec's starter_prompts).
            "starter_prompts": list(env.version.spec.get("starter_prompts") or []),
            "budget": {
                "limit": str(cap) if cap is not None else None,
                "spent": str(spent.get(str(agent.pk), Decimal("0"))),
            },
        })
    return result


def agent_spend_this_month(actor: Actor) -> dict[str, Decimal]:
    rows = (
        SpendEntry.objects.filter(organization=actor.organization, created_at__gte=budgets.month_start())
        .values("agent_id")
        .annotate(total=Sum("cost_usd"))
    )
    return {str(r["agent_id"]): r["total"] or Decimal("0") for r in rows if r["agent_id"]}


def organization_budget(actor: Actor) -> dict[str, Any]:
    org = actor.organization
    spent = budgets.organization_spent(org.pk)
    limit = org.monthly_budget_usd
    fraction = float(spent / limit) if limit else None
    return {
        "limit": limit,
        "spent": spent,
        "fraction": fraction,
        "percent": min(100, round((fraction or 0) * 100)),
    }


def organization_budget_state(actor: Actor) -> dict[str, str | None]:
    """The month's organization cap and spend as the chat's state carries them (strings: JSON has no Decimal)."""
    budget = organization_budget(actor)
    return {"limit": str(budget["limit"]) if budget["limit"] is not None else None, "spent": str(budget["spent"])}


# ------------------------------------------------------------------ dashboard


def dashboard(actor: Actor) -> dict[str, Any]:
    since = budgets.month_start()
    runs = visible_runs(actor).filter(created_at__gte=since)
    totals = runs.aggregate(count=Count("id"), cost=Sum("cost_usd"))
    per_surface = dict(runs.values_list("surface").annotate(n=Count("id")).values_list("surface", "n"))
    counts = {value: int(per_surface.get(value, 0)) for value, _label in Surface.choices}
    peak = max([*counts.values(), 1])
    surfaces: list[dict[str, Any]] = [
        {"id": value, "label": label, "count": counts[value], "percent": round(counts[value] * 100 / peak)}
        for value, label in Surface.choices
    ]
    agent_gauges = []
    for row in agent_rows(actor):
        cap = row["budget"]
        if cap is None:
            continue
        limit = Decimal(str(cap))
        fraction = float(row["spent"] / limit) if limit else 1.0
        agent_gauges.append({"agent": row["agent"], "limit": limit, "spent": row["spent"],
                             "percent": min(100, round(fraction * 100))})
    # The ledger is what budgets count; someone who only sees their own runs sees what those cost.
    spend = budgets.organization_spent(actor.organization.pk) if actor.has("runs:view") else totals["cost"]
    return {
        "run_count": totals["count"] or 0,
        "spend": spend or Decimal("0"),
        "surfaces": surfaces,
        "org_budget": organization_budget(actor),
        "agent_gauges": agent_gauges,
        "since": since,
    }


# ------------------------------------------------------------------ runs


def visible_runs(actor: Actor) -> QuerySet[Run]:
    """The same rule as the run API: everyone's runs with runs:view, else one's own."""
    qs = Run.objects.filter(organization=actor.organization)
    if not actor.has("runs:view"):
        qs = qs.filter(user_id=actor.user_id)
    return qs


def filtered_runs(actor: Actor, *, agent: str = "", surface: str = "", status: str = "", trigger: str = "",
                  since: datetime | None = None, until: datetime | None = None) -> QuerySet[Run]:
    qs = visible_runs(actor).select_related("agent", "version", "user")
    if agent:
        qs = qs.filter(agent_id=agent)
    if trigger:
        from triggers.models import TriggerFiring

        qs = qs.filter(pk__in=TriggerFiring.objects.filter(
            trigger_id=trigger, organization=actor.organization).values("run_id"))
    if surface:
        qs = qs.filter(surface=surface)
    if status:
        qs = qs.filter(status=status)
    if since:
        qs = qs.filter(created_at__gte=since)
    if until:
        qs = qs.filter(created_at__lt=until)
    return qs.order_by("-created_at")


def run_story(actor: Actor, run: Run) -> dict[str, Any]:
    """What a run's page tells beyond its transcript: each tool call with how long it took and who decided
    its approval (and when), the model profile its version names and the models the ledger billed, and how
    long the run waited (in the queue, for a person) and worked. Five queries, whatever the number of calls."""
    import json

    from agents.models import ModelProfile

    every_approval = list(run.approvals.select_related("decided_by"))
    approvals = {a.tool_call_id: a for a in every_approval}
    calls = []
    for call in run.tool_calls.order_by("id"):
        approval = approvals.pop(call.tool_call_id, None)
        calls.append({
            "call": call, "approval": approval, "duration": _seconds(call.started_at, call.finished_at),
            "args_json": json.dumps(call.args, indent=2, ensure_ascii=False),
            "result_json": json.dumps(call.result, indent=2, ensure_ascii=False, default=str),
        })
    profile_id = (run.version.spec or {}).get("model_profile_id") if run.version_id else None
    profile = None
    if profile_id:
        try:
            profile = ModelProfile.objects.filter(organization=actor.organization, pk=profile_id).first()
        except (ValueError, TypeError, ValidationError):
            profile = None
    billed = list(run.spend.exclude(model="").values("model").annotate(
        requests=Count("id"), cost=Sum("cost_usd")).order_by("model"))
    on_person = _waiting_for_people(
        [(a.created_at, a.decided_at) for a in every_approval]
        + [(q.created_at, q.answered_at) for q in run.questions.only("created_at", "answered_at")])
    elapsed = _seconds(run.started_at, run.finished_at)
    return {
        "calls": calls,
        # An approval whose call never ran (rejected, expired, the run stopped) is still who decided what.
        "unmatched_approvals": list(approvals.values()),
        "profile": profile,
        "billed_models": billed,
        "waited": _seconds(run.created_at, run.started_at),
        # Time parked for a decision or an answer is a person's, not the agent's: said apart (issue 44 §7).
        "waited_for_people": on_person,
        "worked": None if elapsed is None else max(0.0, elapsed - on_person),
    }


def _waiting_for_people(spans: list[tuple[datetime, datetime | None]]) -> float:
    """Seconds covered by the spans (calls parked together wait once); an open span runs until now."""
    from django.utils import timezone

    now = timezone.now()
    total, reach = 0.0, None
    for start, end in sorted((s, e or now) for s, e in spans):
        if reach is not None and start < reach:
            if end > reach:
                total += (end - reach).total_seconds()
                reach = end
            continue
        total += max(0.0, (end - start).total_seconds())
        reach = end
    return total


def run_times(runs: list[Run]) -> dict[str, dict[str, float | None]]:
    """For the Activity list: each run's seconds waiting for a person (approvals, questions) and working (the
    rest of its time from start to end, as on its page), in two queries for the whole page."""

    ids = [run.pk for run in runs]
    spans: dict[str, list[tuple[datetime, datetime | None]]] = {str(pk): [] for pk in ids}
    for run_id, start, end in Approval.objects.filter(run_id__in=ids).values_list("run_id", "created_at", "decided_at"):
        spans[str(run_id)].append((start, end))
    for run_id, start, end in Question.objects.filter(run_id__in=ids).values_list("run_id", "created_at", "answered_at"):
        spans[str(run_id)].append((start, end))
    times: dict[str, dict[str, float | None]] = {}
    for run in runs:
        on_person = _waiting_for_people(spans[str(run.pk)])
        elapsed = _seconds(run.started_at, run.finished_at)
        times[str(run.pk)] = {"waited_for_people": on_person,
                              "worked": None if elapsed is None else max(0.0, elapsed - on_person)}
    return times


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


# ------------------------------------------------------------------ chat


def chat_conversations(actor: Actor, limit: int = 100, q: str = "", *, archived: bool = False,
                       tag: str = "") -> list[Conversation]:
    """The chat's own list: what the person reads in chat, without embed visitors' conversations — those
    are recorded with the embed's creator as owner, but they are the visitors' and belong under the embed.
    The person's own pins come first (newest pin first; someone else's pin on a shared thread is theirs, not
    this person's); `q` keeps those whose title or a message contains it. Archived ones (only an owner archives)
    are left out, or with `archived` are the only ones, the person's own; `tag` keeps the person's own carrying it.
    One query either way."""
    from agents.chat import readable_conversations

    qs = readable_conversations(actor).exclude(surface=Surface.EMBED)
    qs = (qs.filter(owner_id=actor.user_id, archived_at__isnull=False) if archived
          else qs.filter(archived_at__isnull=True))
    if tag:
        qs = qs.filter(owner_id=actor.user_id, tags__contains=[tag])
    q = q.strip()
    if q:
        said = Message.objects.filter(conversation=OuterRef("pk"), content__icontains=q)
        qs = qs.filter(Q(title__icontains=q) | Exists(said))
    my_pin = Case(When(owner_id=actor.user_id, then=F("pinned_at")))
    qs = qs.annotate(my_pin=my_pin).order_by(F("my_pin").desc(nulls_last=True), "-last_active_at")
    return list(qs[:limit])


def conversation_tags(actor: Actor) -> list[str]:
    """The tags on the person's own conversations, A to Z: the chat list's filter. One query (PostgreSQL unnests
    the JSON lists)."""
    unnest = Func(F("tags"), function="jsonb_array_elements_text", output_field=CharField())
    return list(Conversation.objects.filter(organization=actor.organization, owner_id=actor.user_id)
                .exclude(tags=[]).annotate(tag=unnest).values_list("tag", flat=True).distinct().order_by("tag"))


def conversation_groups(conversations: list[Conversation], today: date | None = None) -> list[dict[str, Any]]:
    """The chat list in the groups chat apps use: the person's pins, then by last activity in their time zone —
    Today, Yesterday, Previous 7 days, Previous 30 days, then one group per month (e.g. "November 2026"). Order
    kept; empty groups left out."""
    today = today or timezone.localdate()
    groups: list[dict[str, Any]] = []

    def key_of(conversation: Conversation) -> tuple[str, str]:
        if getattr(conversation, "my_pin", None):
            return "pinned", gettext("Pinned")
        day = timezone.localdate(conversation.last_active_at)
        age = (today - day).days
        if age <= 0:
            return "today", gettext("Today")
        if age == 1:
            return "yesterday", gettext("Yesterday")
        if age <= 7:
            return "week", gettext("Previous 7 days")
        if age <= 30:
            return "month", gettext("Previous 30 days")
        return day.strftime("%Y-%m"), date_format(day, "YEAR_MONTH_FORMAT")

    for conversation in conversations:
        key, label = key_of(conversation)
        if not groups or groups[-1]["key"] != key:
            groups.append({"key": key, "label": label, "items": []})
        groups[-1]["items"].append(conversation)
    return groups


def tool_call_json(call: ToolCall | None, tool_call_id: str) -> dict[str, Any]:
    if call is None:
        return {"id": tool_call_id, "name": "", "args": {}, "result": None, "status": "unfinished"}
    return {
        "id": call.tool_call_id,
        "name": call.tool_name,
        "args": call.args,
        "result": call.result,
        "status": call.status,
    }


def _reconstructed_parts(message: Message, calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Turns written before `parts` existed: reasoning, then every tool, then the answer (a guess, kept only
    for them)."""
    parts: list[dict[str, Any]] = []
    if message.thinking:
        parts.append({"type": "thinking", "text": message.thinking})
    parts += [{"type": "tool", "tool_call_id": c.tool_call_id} for c in calls]
    if message.content:
        parts.append({"type": "text", "text": message.content})
    return parts


def _follow_up_steps(message: Message) -> list[str]:
    from capabilities.follow_ups.models import FollowUp

    try:
        follow_up = message.follow_up  # type: ignore[attr-defined]
    except FollowUp.DoesNotExist:
        return []
    return list(follow_up.steps) if follow_up.status == FollowUp.Status.READY else []


def conversation_turns(conversation: Conversation, user_id: Any = None) -> list[dict[str, Any]]:
    """The transcript as the chat client renders it, live and reopened alike: the branch on screen
    (agents.branches), each message with its versions (`versions`: its and its siblings' ids, oldest first)
    and each answer with the feedback `user_id` gave it.

    Consecutive assistant messages of one run are one turn (avatar and name once); a message without a run is
    never grouped. Six queries whatever the length.
    """
    # The runs before the messages: a run ends with its answer in one statement, so a run read as still going
    # has no answer yet or is followed to its end by the page (chat.js), and one read as ended has its answer
    # in the messages read next. The other way round, a run ending between the reads showed neither.
    runs = {
        str(r["id"]): r
        for r in Run.objects.filter(conversation=conversation).values(
            "id", "status", "input_tokens", "output_tokens", "cost_usd", "cost_is_partial", "context_tokens",
            "context_window",
        )
    }
    # A reverse one-to-one in the same query: the follow-up buttons an answer got (capabilities/follow_ups).
    messages = list(conversation.messages.filter(on_branch=True).select_related("follow_up").order_by("id"))
    versions = branches.siblings(messages)
    given = {row["message_id"]: {"rating": row["rating"], "comment": row["comment"]}
             for row in Feedback.objects.filter(message__in=[m.pk for m in messages if m.role == "assistant"],
                                                user_id=user_id).values("message_id", "rating", "comment")
             } if user_id is not None else {}
    calls: dict[tuple[str, str], ToolCall] = {}
    calls_by_message: dict[int, list[ToolCall]] = {}
    for call in ToolCall.objects.filter(run__conversation=conversation).order_by("id"):
        calls[(str(call.run_id), call.tool_call_id)] = call
        if call.message_id:
            calls_by_message.setdefault(call.message_id, []).append(call)
    turns: list[dict[str, Any]] = []
    for message in messages:
        run_id = str(message.run_id) if message.run_id else None
        if message.role == Message.Role.USER:
            # `running`: its answer is still being written (a reopened page follows the run live).
            turns.append({"role": "user", "text": message.content, "author": message.author_label,
                          "message_id": message.pk, "run_id": run_id, "versions": versions[message.pk],
                          "running": run_id in runs and runs[run_id]["status"] in ("queued", "running"),
                          "attachments": public_attachments(message.attachments),
                          "at": message.created_at.isoformat()})
            continue
        if message.role != Message.Role.ASSISTANT:
            continue
        raw_parts = message.parts or _reconstructed_parts(message, calls_by_message.get(message.pk, []))
        parts: list[dict[str, Any]] = []
        for part in raw_parts:
            if part.get("type") == "tool":
                parts.append({"type": "tool",
                              "call": tool_call_json(calls.get((run_id or "", part["tool_call_id"])),
                                                     part["tool_call_id"])})
            elif part.get("type") in ("text", "thinking"):
                parts.append({"type": part["type"], "text": part.get("text", "")})
            elif part.get("type") == "delegation":  # a delegation panel (capabilities/subagents), as drawn live
                parts.append(part)
        follow_ups = _follow_up_steps(message)
        previous = turns[-1] if turns else None
        if previous and previous["role"] == "assistant" and run_id and previous["run_id"] == run_id:
            if follow_ups:  # the buttons belong under the turn's last answer
                previous["follow_ups"], previous["message_id"] = follow_ups, message.pk
            # A resumed run writes the parked call again in its continuation: one turn shows it once.
            seen = {p["call"]["id"] for p in previous["parts"] if p["type"] == "tool"}
            # A delegation resumed after an approval keeps its one panel: the continuation is added to it.
            panels = {p.get("task_id"): i for i, p in enumerate(previous["parts"]) if p["type"] == "delegation"}
            for p in parts:
                if p["type"] == "delegation" and p.get("task_id") in panels:
                    earlier = previous["parts"][panels[p["task_id"]]]
                    previous["parts"][panels[p["task_id"]]] = {**p, "parts": earlier["parts"] + p["parts"]}
            previous["parts"] += [p for p in parts if (p["type"] != "tool" or p["call"]["id"] not in seen)
                                  and not (p["type"] == "delegation" and p.get("task_id") in panels)]
            continue
        run = runs.get(run_id or "")
        turns.append({
            "message_id": message.pk,
            # The turn's first answer: what Regenerate replaces, the arrows walk and feedback is given on.
            "head_id": message.pk,
            "versions": versions[message.pk],
            "feedback": given.get(message.pk),
            "follow_ups": follow_ups,
            "role": "assistant",
            "run_id": run_id,
            "agent": message.author_label or conversation.agent.name,
            "parts": parts,
            "at": message.created_at.isoformat(),
            "usage": None if run is None else {
                "input_tokens": run["input_tokens"],
                "output_tokens": run["output_tokens"],
                "cost_usd": str(run["cost_usd"]),
                "cost_is_partial": run["cost_is_partial"],
                "status": run["status"],
                **context_usage(run),
            },
        })
    return turns


def open_requests(actor: Actor, conversation: Conversation) -> dict[str, list[dict[str, Any]]]:
    """Pending approvals and questions of this conversation's runs, so they return when it is reopened."""
    approvals = [
        {"approval_id": str(a.pk), "run_id": str(a.run_id), "tool_call_id": a.tool_call_id,
         "tool_name": a.tool_name, "args": a.args}
        for a in Approval.objects.filter(organization=actor.organization, run__conversation=conversation,
                                         status=Approval.Status.PENDING).order_by("created_at")
    ]
    questions = [
        {"question_id": str(q.pk), "run_id": str(q.run_id), "questions": q.questions}
        for q in Question.objects.filter(organization=actor.organization, run__conversation=conversation,
                                         status=Question.Status.PENDING, asked_user_id=actor.user_id)
        .order_by("created_at")
    ]
    return {"approvals": approvals, "questions": questions}


def latest_usage(turns: list[dict[str, Any]]) -> dict[str, Any] | None:
    for turn in reversed(turns):
        if turn["role"] == "assistant" and turn.get("usage"):
            return turn["usage"]
    return None


def can_publish(level: str | None) -> bool:
    return at_least(level, PUBLISH)


def now() -> datetime:
    return timezone.now()


# ------------------------------------------------------------------ the Builder's Availability section


def embed_rows(actor: Actor, agent: Agent) -> list[dict[str, Any]]:
    """The agent's embeds with what a person pastes or sends (the same builders the API serializes with),
    in one query. Empty for a role that cannot manage embeds: the API refuses it the list too, and a hosted
    page is protected by nothing but its address."""
    from embeds import services as embed_services
    from embeds.models import Embed

    if not actor.has("embeds:manage"):
        return []
    rows = []
    for embed in Embed.objects.filter(organization=actor.organization, agent=agent).order_by("created_at"):
        rows.append({
            "embed": embed,
            "snippet": embed_services.snippet(embed) if embed.kind == Embed.Kind.WIDGET else "",
            "socket_url": embed_services.socket_url(embed) if embed.kind == Embed.Kind.SOCKET else "",
            "page_url": embed_services.page_url(embed) if embed.kind == Embed.Kind.PAGE else "",
        })
    return rows


def binding_rows(actor: Actor, agent: Agent) -> list[Any]:
    """The bots answering as this agent (what GET /agents/<id>/bindings lists to anyone who sees the agent)."""
    from channelbots.models import Binding

    return list(Binding.objects.filter(organization=actor.organization, agent=agent).select_related("bot")
                .order_by("created_at"))


def bindable_bots(actor: Actor) -> list[Any]:
    """The organization's bots that answer as no agent yet (a bot serves exactly one agent)."""
    from channelbots.models import ChannelBot

    if not actor.has("bots:manage"):
        return []
    return list(ChannelBot.objects.filter(organization=actor.organization, binding__isnull=True).order_by("name"))


# ------------------------------------------------------------------ usage


USAGE_DIMENSIONS: tuple[tuple[str, str], ...] = (
    ("agent", "Agent"), ("person", "Person"), ("model", "Model"), ("surface", "Surface"),
)
# (runs' grouping fields, spend entries' grouping fields) per dimension: the first field is the key, the
# second the label. A model is known only on the spend ledger (one run may call several).
_USAGE_FIELDS: dict[str, tuple[tuple[str, str] | None, tuple[str, str]]] = {
    "agent": (("agent_id", "agent__name"), ("agent_id", "agent__name")),
    "person": (("user_id", "user__email"), ("run__user_id", "run__user__email")),
    "model": (None, ("model", "model")),
    "surface": (("surface", "surface"), ("surface", "surface")),
}


def _usage_row(rows: dict[str, dict[str, Any]], labels: dict[str, str], key: Any, label: Any) -> dict[str, Any]:
    """The row of `key` (created empty the first time): runs and spend add up across both ledgers."""
    name = str(key) if key not in (None, "") else ""
    text = labels.get(label, label)
    return rows.setdefault(name, {"key": name, "label": str(text or "") or "—", "runs": 0, "spend": Decimal("0"),
                                  "input_tokens": 0, "output_tokens": 0})


def visible_spend(actor: Actor) -> QuerySet[SpendEntry]:
    """The spend ledger with the same rule as visible_runs: the organization's with runs:view, else the
    entries of one's own runs."""
    qs = SpendEntry.objects.filter(organization=actor.organization)
    if not actor.has("runs:view"):
        qs = qs.filter(run__user_id=actor.user_id)
    return qs


def usage(actor: Actor, *, since: datetime, until: datetime) -> dict[str, Any]:
    """Spend (the ledger budgets count), runs and tokens per agent, person, model and surface, and per day,
    for [since, until) — in a fixed number of queries."""
    from django.db.models.functions import TruncDate

    runs = visible_runs(actor).filter(created_at__gte=since, created_at__lt=until)
    spend = visible_spend(actor).filter(created_at__gte=since, created_at__lt=until)
    surface_labels = dict(Surface.choices)
    tables: dict[str, list[dict[str, Any]]] = {}
    for dimension, (run_fields, spend_fields) in _USAGE_FIELDS.items():
        rows: dict[str, dict[str, Any]] = {}
        labels = surface_labels if dimension == "surface" else {}
        row = functools.partial(_usage_row, rows, labels)
        for entry in spend.values(*spend_fields).annotate(
            total=Sum("cost_usd"), tokens_in=Sum("input_tokens"), tokens_out=Sum("output_tokens"),
            run_count=Count("run", distinct=True),
        ):
            item = row(entry[spend_fields[0]], entry[spend_fields[1]])
            item["spend"] += entry["total"] or Decimal("0")
            item["input_tokens"] += entry["tokens_in"] or 0
            item["output_tokens"] += entry["tokens_out"] or 0
            if run_fields is None:
                item["runs"] += entry["run_count"]
        if run_fields is not None:
            for entry in runs.values(*run_fields).annotate(n=Count("id")):
                row(entry[run_fields[0]], entry[run_fields[1]])["runs"] += entry["n"]
        tables[dimension] = sorted(rows.values(), key=lambda r: (-r["spend"], -r["runs"], r["label"]))
    daily: dict[str, dict[str, Any]] = {}
    for entry in spend.annotate(day=TruncDate("created_at")).values("day").annotate(total=Sum("cost_usd")):
        daily.setdefault(entry["day"].isoformat(), {"runs": 0, "spend": Decimal("0")})["spend"] += entry["total"] or 0
    for entry in runs.annotate(day=TruncDate("created_at")).values("day").annotate(n=Count("id")):
        daily.setdefault(entry["day"].isoformat(), {"runs": 0, "spend": Decimal("0")})["runs"] += entry["n"]
    totals = {"runs": sum(r["runs"] for r in tables["surface"]),
              "spend": sum((r["spend"] for r in tables["agent"]), Decimal("0"))}
    return {"tables": tables, "daily": dict(sorted(daily.items())), "totals": totals}
