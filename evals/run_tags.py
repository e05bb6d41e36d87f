"""Tags on recorded runs: a person marks runs ("refunds", "edge-case") and a replay set picks them by tag
(`replays.select_runs`, selection `tag`), so a set of conversations worth replaying is named once and replayed
against every draft.

A tag is seen and set only on a run the person may read (`replays.readable_runs`: their own, or any with
`runs:view`) of an agent they may see (to read) or edit (to set): another organization's run, another agent's
or someone else's without `runs:view` is 404. Names are lowercase words (letters, digits, - and _), at most
MAX_TAGS_PER_RUN a run; setting them replaces the run's list and is audited.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.db.models import Count

from agenticos.errors import Invalid, NotFound
from agenticos.tenancy import Actor, parse_uuid
from agents.models import Agent, Run
from evals.models import RunTag
from governance.grants import EDIT, VIEW, require_agent_access

TAG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MAX_TAGS_PER_RUN = 20
TAG_RULE = "Lowercase letters, digits, - and _ (at most 40 characters, starting with a letter or digit)."


def run_for(actor: Actor, agent: Agent, run_id: Any, *, level: str = VIEW) -> Run:
    """One recorded run of the agent this person may read, on an agent they may reach at `level` (404 else)."""
    from evals import replays

    require_agent_access(actor, agent, level)
    wanted = parse_uuid(str(run_id))
    run = replays.readable_runs(actor, agent).filter(pk=wanted).first() if wanted else None
    if run is None:
        raise NotFound("Run not found.")
    return run


def tags_of(run: Run) -> list[str]:
    return list(RunTag.objects.filter(run=run).order_by("name").values_list("name", flat=True))


def clean_tag(raw: Any) -> str | None:
    """A tag as stored (trimmed, lowercase), or None when it is not one."""
    if not isinstance(raw, str):
        return None
    name = raw.strip().lower()
    return name if TAG_RE.match(name) else None


def clean_tags(raw: Any, field: str = "tags") -> list[str]:
    """The tags as stored, without repeats, in the order given; Invalid naming each bad one."""
    if not isinstance(raw, list):
        raise Invalid("Tags are a list.", details={"problems": [{"field": field, "message": "A list of tags."}]})
    problems: list[dict[str, str]] = []
    names: list[str] = []
    for index, item in enumerate(raw):
        name = clean_tag(item)
        if name is None:
            problems.append({"field": f"{field}.{index}", "message": TAG_RULE})
        elif name not in names:
            names.append(name)
    if len(names) > MAX_TAGS_PER_RUN:
        problems.append({"field": field, "message": f"At most {MAX_TAGS_PER_RUN} tags a run."})
    if problems:
        raise Invalid("The tags are not valid.", details={"problems": problems})
    return names


def set_tags(*, actor: Actor, agent: Agent, run: Run, tags: Any) -> list[str]:
    """Replace the run's tags. Editors of the agent tag the runs they may read (tags pick what is replayed)."""
    from evals import replays

    require_agent_access(actor, agent, EDIT)
    if run.agent_id != agent.pk:
        raise NotFound("Run not found.")
    names = clean_tags(tags)
    with transaction.atomic():
        before = set(RunTag.objects.select_for_update().filter(run=run).values_list("name", flat=True))
        removed, added = sorted(before - set(names)), [n for n in names if n not in before]
        RunTag.objects.filter(run=run, name__in=removed).delete()
        RunTag.objects.bulk_create([RunTag(organization=actor.organization, agent=agent, run=run, name=name,
                                           created_by=actor.user) for name in added], ignore_conflicts=True)
        if added or removed:
            replays._record(actor, "run.tags_set", target=agent, run_id=str(run.pk), added=added, removed=removed)
    return sorted(names)


def agent_tags(actor: Actor, agent: Agent) -> list[dict[str, Any]]:
    """The tags on the agent's runs this person may read, with how many runs carry each (by name)."""
    from evals import replays

    require_agent_access(actor, agent, VIEW)
    readable = replays.readable_runs(actor, agent).values("pk")
    rows = (RunTag.objects.filter(organization=actor.organization, agent=agent, run__in=readable)
            .values("name").annotate(runs=Count("run")).order_by("name"))
    return [{"name": row["name"], "runs": row["runs"]} for row in rows]
