"""The catalog's `voice` field follows the spec's "Voz" column (capability-catalog, "Qué se entrega").

The column's words map onto the three values the API serves: what works on the call's own model is `live`
(tal cual, adaptada, mapeada, en las transcripciones, en pantalla), `delegada` is `hand_off`, and what a call
leaves out is `never` (sin efecto, descartada, no disponible).
"""

from __future__ import annotations

from capabilities import registry

# The spec's column, copied word for word; a capability added to the catalog must be added here too.
SPEC_VOZ = {
    "knowledge": "tal cual", "skills": "adaptada", "context": "tal cual", "memory_files": "tal cual",
    "memory_mem0": "tal cual", "conversation_search": "tal cual", "web_research": "tal cual",
    "web_fetch": "tal cual", "browser_use": "delegada", "code_execution": "tal cual", "sandbox": "delegada",
    "charts": "tal cual", "visuals": "tal cual", "image_generation": "tal cual", "text_to_speech": "tal cual",
    "video_generation": "delegada", "coding_agent": "delegada", "subagents": "delegada", "planning": "tal cual",
    "thinking": "mapeada", "system_reminders": "sin efecto", "tool_search": "descartada", "clock": "tal cual",
    "guardrails": "en las transcripciones", "compaction": "sin efecto", "media": "sin efecto",
    "tool_output_limits": "tal cual", "artifacts": "tal cual", "channel_tools": "no disponible",
    "ask_user": "en pantalla", "follow_ups": "no disponible",
    # Not rows of the table, named by the paragraphs after it: MCP tools are given to a call directly, custom
    # and database tools are tools like any other; the Architect designs agents in text chat only.
    "mcp": "tal cual", "custom_tools": "tal cual", "tool_builder": "tal cual", "database": "tal cual",
    "architect": "no disponible",
}
WORD_TO_VOICE = {
    "tal cual": "live", "adaptada": "live", "mapeada": "live", "en las transcripciones": "live",
    "en pantalla": "live", "delegada": "hand_off", "sin efecto": "never", "descartada": "never",
    "no disponible": "never",
}


def test_every_capability_joins_a_call_as_the_spec_column_says():
    served = {c["id"]: c["voice"] for c in registry.catalog_json()["capabilities"]}
    assert set(served) == set(SPEC_VOZ), "a capability is missing from the spec's Voz column copy"
    wrong = {cid: (served[cid], WORD_TO_VOICE[word]) for cid, word in SPEC_VOZ.items()
             if served[cid] != WORD_TO_VOICE[word]}
    assert wrong == {}


def test_the_browser_is_handed_off_not_driven_by_the_call():
    assert registry.get("browser_use").voice == "hand_off"
