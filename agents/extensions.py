"""What the layers above the agents app plug into it. They import agents; agents never imports them (the
import-linter contract in pyproject.toml), so each registers here from its AppConfig.ready():

- a **publish gate** runs before a draft is frozen and refuses by raising (evals: a suite that gates publishing
  must pass on the draft);
- a **deferred answerer** answers a run's gated calls and questions in place of a person, for runs of its own
  surface (evals: a case says how its calls are approved and its questions answered);
- a **run capability** factory adds pydantic-ai capabilities to the runs it concerns (evals: a replay answers its
  run's tool calls from the recorded run); it is called while the run is assembled, on the run's DB thread, and
  returns [] without a query for a run it does not concern;
- a **run-ended hook** hears every run the runner ends (its row and final status), after the ending is written
  (agents.rollouts: a rollout's candidate run re-checks its thresholds). It must be cheap for a run it does not
  concern (no query) and never raise;
- a **proposed trigger** handler checks, describes and creates the schedule an Architect's proposal carries
  (triggers: its own validators and service, which the Architect in agents.architect and the proposal check in
  capabilities.architect sit below and cannot import).

Registration is by name and idempotent (ready() may run twice in tests); a test asserts each is registered, so
a broken import fails loudly instead of skipping a gate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

    from agenticos.tenancy import Actor
    from agents.models import Agent, AgentVersion, Run

# (*, actor: Actor, agent: Agent, version: AgentVersion | None) -> None, raises agenticos.errors.Invalid. `version`
# None checks the draft about to be published; a version is checked before a rollout serves it (agents.rollouts).
PublishGate = Callable[..., None]
RunEndedHook = Callable[["Run", str], None]
# (the run, the names of its tools that only read — agents.runner.checkpoint.read_only_tools, the one rule for
# "read-only" that resuming a run uses too) → pydantic-ai capabilities.
RunCapabilities = Callable[["Run", frozenset[str]], list[Any]]


@dataclass(frozen=True)
class DeferredAnswerer:
    # (the run, one round of deferred requests, tool name → stable tool id) → the answers, or None to park.
    answer: Callable[[Run, DeferredToolRequests, dict[str, str]], DeferredToolResults | None]
    max_rounds: int


@dataclass(frozen=True)
class ProposedTrigger:
    # (actor, the proposal's trigger as a dict) → problems as "field: message" sentences ([] when it passes).
    problems: Callable[[Actor, dict[str, Any]], list[str]]
    # (the trigger as a dict) → the schedule in a person's words, for the card.
    describe: Callable[[dict[str, Any]], str]
    # (actor, the new draft agent, the trigger as a dict) → the trigger's id; raises agenticos.errors.Forbidden
    # when the person may not create it (the draft is kept without it) or Invalid.
    create: Callable[[Actor, Agent, dict[str, Any]], str]


PROPOSED_TRIGGER: dict[str, ProposedTrigger] = {}
PUBLISH_GATES: dict[str, PublishGate] = {}
DEFERRED_ANSWERERS: dict[str, DeferredAnswerer] = {}
RUN_ENDED_HOOKS: dict[str, RunEndedHook] = {}
RUN_CAPABILITIES: dict[str, RunCapabilities] = {}


def register_publish_gate(name: str, gate: PublishGate) -> None:
    PUBLISH_GATES[name] = gate


def register_deferred_answerer(surface: str, answerer: DeferredAnswerer) -> None:
    DEFERRED_ANSWERERS[surface] = answerer


def register_run_ended(name: str, hook: RunEndedHook) -> None:
    RUN_ENDED_HOOKS[name] = hook


def register_run_capabilities(name: str, factory: RunCapabilities) -> None:
    RUN_CAPABILITIES[name] = factory


def register_proposed_trigger(handler: ProposedTrigger) -> None:
    PROPOSED_TRIGGER["schedule"] = handler


def proposed_trigger() -> ProposedTrigger:
    """The triggers app's handler; its absence is a broken install, never a proposal quietly accepted without
    its trigger."""
    return PROPOSED_TRIGGER["schedule"]


def run_capabilities(run: Run, read_only: frozenset[str]) -> list[Any]:
    return [cap for factory in RUN_CAPABILITIES.values() for cap in factory(run, read_only)]


def check_publish_gates(*, actor: Actor, agent: Agent, version: AgentVersion | None = None) -> None:
    for gate in PUBLISH_GATES.values():
        gate(actor=actor, agent=agent, version=version)


def run_ended(run: Run, status: str) -> None:
    for hook in RUN_ENDED_HOOKS.values():
        hook(run, status)


def deferred_answerer(surface: str) -> DeferredAnswerer | None:
    return DEFERRED_ANSWERERS.get(surface)


