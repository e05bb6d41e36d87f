"""Images out of history (spec "Imágenes fuera del historial"): no tools. Moves the large parts of a stored
message history — images and files as `BinaryContent`, and text parts — of `threshold_bytes` or more to the
organization's storage behind `media+sha256://` references, and always puts them back before the model sees
the history again. The content-addressed store is ours (store.py: default_storage under
`media/<organization>/<conversation>/<sha256>`); the walkers are pydantic-ai-harness's (history.py).

Where a history is stored: between turns the history is rebuilt from the transcript's text (agents/runner/
history.py), so an attachment reaches the model once, in its own turn. Two dumps are the exception, the
library's own messages of a run, base64 included: a parked run's (`Run.parked_state`: a gated call waiting for a
person, or an ask_user question), held until the run resumes; and a compacted conversation's
(`agents.CompactedHistory`, capabilities/compaction/persisted.py), replayed by every later turn until the next
compaction replaces it — that is where the bytes pile up in Postgres, and what this offloads.

Binding it is the decision to offload (`MediaOffload`, found by the runner among the run's capabilities when it
parks or keeps a compacted history; the stored dump says `media` when the walker wrote it). Restoring is not
optional: the runner restores every such history it resumes or replays, bound or not — an agent unbound since
leaves its references behind. It never shrinks what the model is sent:
the parts are back before the request leaves, and the store mints no URL a provider (or anyone) could fetch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.capabilities import AbstractCapability

from capabilities.base import BuildContext, Built, Capability
from capabilities.lifecycle import RunHandle, RunHooks

DEFAULT_THRESHOLD_BYTES = 32 * 1024


class MediaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold_bytes: int = Field(
        default=DEFAULT_THRESHOLD_BYTES, ge=1024, le=10 * 1024 * 1024,
        description="Parts of this size or larger are stored outside the history (bytes).")


@dataclass
class MediaOffload(AbstractCapability[Any]):
    """The binding's decision to offload, with its threshold. It changes nothing inside the run (the model is
    sent every part as it is); the runner reads it when it stores the run's history (`threshold_of`)."""

    threshold_bytes: int = DEFAULT_THRESHOLD_BYTES


def threshold_of(capabilities: list[Any]) -> int | None:
    """The offload threshold of a run's built capabilities, or None when media is not bound."""
    return next((c.threshold_bytes for c in capabilities if isinstance(c, MediaOffload)), None)


def _on_park(handle: RunHandle, tree: Any) -> tuple[Any, dict[str, Any]]:
    """A parked history's large parts go to the store when media is bound on the run (storage IO, before the
    park's transaction); the stored dump then says `media`, and only such a dump is restored."""
    from capabilities.media import history

    run = handle.run
    stored, offloaded = history.offload_tree(
        tree, threshold_bytes=threshold_of(handle.built_capabilities), organization_id=run.organization_id,
        conversation_id=run.conversation_id, run_id=run.pk)
    return stored, ({"media": True} if offloaded else {})


def _restore_history(run: Any, stored: Any) -> Any:
    """Restored whether or not the agent is still bound: its references go back in."""
    if not (run.parked_state or {}).get("media"):
        return stored
    from capabilities.media import history

    return history.restore(stored, organization_id=run.organization_id, conversation_id=run.conversation_id,
                           run_id=run.pk)


def build(ctx: BuildContext) -> list[Built]:
    config = ctx.config
    assert isinstance(config, MediaConfig)
    return [MediaOffload(threshold_bytes=config.threshold_bytes)]


CAPABILITY = Capability(
    id="media",
    name="Images out of history",
    category="utility",
    description="Keeps large images and files of a stored conversation history in the organization's storage "
                "and puts them back before the model reads the history.",
    offers="stored run histories kept small when they carry images and large files",
    examples=(
        "Review these ten screenshots and file a ticket for each bug (each ticket waits for approval).",
        "Compare the attached floor plans, then ask me which one to send to the client.",
    ),
    never_does=(
        "It never changes what the model is sent, never mints a public link to a file, and never resolves "
        "a reference outside the organization and conversation that stored it."
    ),
    tools=(),
    tools_note="No tools on purpose: it rewrites how a stored history keeps its large parts instead of offering "
               "the model anything to call.",
    config_model=MediaConfig,
    # In a voice call it has no effect (catalog "sin efecto"): a call stores no run history.
    voice="never",
    advanced=True,
    build=build,
    hooks=RunHooks(on_park=_on_park, restore_history=_restore_history),
)
