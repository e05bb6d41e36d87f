"""Promote a specialist the model wrote (allow_dynamic) to a draft agent.

A specialist is not kept past its run by design: keeping one means publishing an agent, which is a person's
act. This is the way out: its definition travelled in the delegation's opening frame and is in the turn's
`delegation` part, and a person with `agents:edit` may turn it into a draft they own. It stops there: it does
not publish, does not name the new agent as a delegate, and leaves the run as it was.
"""

from __future__ import annotations

from typing import Any

from agenticos.errors import NotFound
from agents import services
from agents.models import Agent, Message, ModelProfile, Run


def written_specialist(run: Run, task_id: str) -> dict[str, Any]:
    for parts in Message.objects.filter(run=run, role=Message.Role.ASSISTANT).values_list("parts", flat=True):
        for part in parts or []:
            if (isinstance(part, dict) and part.get("type") == "delegation" and part.get("task_id") == task_id
                    and part.get("definition")):
                return part
    raise NotFound("No specialist written in this run under that task.")


def promote_specialist(*, actor: Any, run: Run, task_id: str) -> Agent:
    actor.require("agents:edit")
    part = written_specialist(run, task_id)
    definition = part["definition"]
    profile = ModelProfile.objects.filter(organization=actor.organization, label=definition.get("model", ""),
                                          kind=ModelProfile.Kind.CHAT).only("pk").first()
    spec: dict[str, Any] = {"name": part["name"], "description": str(part.get("task", ""))[:2000],
                            "instructions": definition.get("instructions", "")}
    if profile is not None:
        spec["model_profile_id"] = str(profile.pk)
    return services.create_agent(actor=actor, name=part["name"], spec=spec)
