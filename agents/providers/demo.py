"""The offline demo model: deterministic, no network, streams word by word, and shows off the tools.

What it does with the latest user prompt (keywords below, matched on whole words after lower-casing and
removing accents, English and Spanish):

| intent      | keywords (EN / ES)                                                        | tool it calls        |
|-------------|---------------------------------------------------------------------------|----------------------|
| time        | time, clock, date, today / hora, fecha, hoy, reloj                        | none: it reads the   |
|             | (the clock capability puts the date and time in the instructions)          | instructions' clock  |
| chart       | chart, graph, plot / grafico, grafica, diagrama                           | `create_chart`       |
| calculation | calculate, compute, sum, multiply, divide, math, or an arithmetic          | `run_python`         |
|             | expression such as `12 * 7` / calcula, calcular, calculo, suma, cuanto     |                      |
| choice      | choose, choice, pick, decide, prefer, option / elige, escoge, decidir,     | `ask_user_question`  |
|             | opcion, opciones, prefieres                                                | (or `ask_user`)      |
| note        | note, save, remember, write / nota, guarda, apunta, anota                  | `write_file`         |
|             | (the prompt goes into notes.md in the agent's workspace)                   |                      |

- A tool is called only when it is offered (`info.function_tools`, matched by its default name); several
  intents in one prompt call several tools in one response, in the order of the table.
- Once tool results (or tool errors) come back after the latest prompt, it summarizes them in text and never
  calls another tool, so a demo run always ends.
- Every text answer says it is the offline demo model and how to add a real key.
- Replies in Spanish when the prompt looks Spanish (a Spanish keyword, ¿/¡/ñ or a common Spanish word).
- Deterministic: the same messages give the same output (tool call ids included).
- Usage is estimated from word counts (input: words in the request history; output: words produced).
  The demo model is free: its cost is 0 (it has no price entry, `DEMO_PROVIDER_NAME` tells the runner so).

Arguments are fitted to each offered tool's JSON schema: the demo's preferred arguments are kept where the
schema has that property, and any other required property gets a plain value of its type.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.usage import RequestUsage

DEMO_PROVIDER_NAME = "demo"
DEMO_MODEL_NAME = "agenticos-demo"

# intent → tool names it may call, first offered wins.
INTENT_TOOLS: dict[str, tuple[str, ...]] = {
    "time": (),  # the clock has no tool: the time is in the instructions (capabilities/clock)
    "chart": ("create_chart",),
    "calculation": ("run_python",),
    "choice": ("ask_user_question", "ask_user"),
    "note": ("write_file",),
}

# Whole words after accent folding. Spanish words are listed separately so the reply language can follow them.
_KEYWORDS_EN: dict[str, frozenset[str]] = {
    "time": frozenset({"time", "clock", "date", "today"}),
    "chart": frozenset({"chart", "charts", "graph", "graphs", "plot"}),
    "calculation": frozenset({"calculate", "calculation", "compute", "sum", "multiply", "divide", "math"}),
    "choice": frozenset({"choose", "choice", "pick", "decide", "prefer", "option", "options"}),
    "note": frozenset({"note", "notes", "save", "remember", "write"}),
}
_KEYWORDS_ES: dict[str, frozenset[str]] = {
    "time": frozenset({"hora", "fecha", "hoy", "reloj"}),
    "chart": frozenset({"grafico", "graficos", "grafica", "graficas", "diagrama"}),
    "calculation": frozenset({"calcula", "calcular", "calculo", "suma", "multiplica", "divide", "cuanto"}),
    "choice": frozenset({"elige", "elegir", "escoge", "escoger", "decidir", "opcion", "opciones", "prefieres"}),
    "note": frozenset({"nota", "notas", "guarda", "apunta", "anota"}),
}
_SPANISH_WORDS = frozenset({"que", "cual", "hola", "por", "favor", "es", "el", "la", "los", "las", "una", "un", "y"})
_EXPRESSION = re.compile(r"\(?\s*-?\d+(?:\.\d+)?(?:\s*(?:[-+*/×÷^%]|\*\*)\s*\(?\s*-?\d+(?:\.\d+)?\s*\)?)+")
_WORD = re.compile(r"\w+", re.UNICODE)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@dataclass(frozen=True)
class Intent:
    intents: tuple[str, ...]
    spanish: bool
    expression: str | None


def detect(prompt: str) -> Intent:
    """The intents of a prompt (in table order), whether to answer in Spanish, and an arithmetic expression."""
    words = set(_WORD.findall(_fold(prompt)))
    expression_match = _EXPRESSION.search(prompt)
    expression = expression_match.group(0).strip() if expression_match else None
    intents = []
    spanish = any(ch in prompt for ch in "¿¡ñÑ") or len(words & _SPANISH_WORDS) >= 2
    for intent in INTENT_TOOLS:
        if words & _KEYWORDS_ES[intent]:
            spanish = True
            intents.append(intent)
        elif words & _KEYWORDS_EN[intent] or (intent == "calculation" and expression):
            intents.append(intent)
    return Intent(tuple(intents), spanish, expression)


# ---------------------------------------------------------------------------------------------- texts

_TEXT = {
    "en": {
        "note": (
            "I am the offline demo model, so my answers are canned and free. To talk to a real model, add an "
            "API key in Settings → Model profiles, or run `manage.py platform_bootstrap --openai-api-key ...`."
        ),
        "hello": "Hello! You wrote: “{prompt}”.",
        "try": "Ask me for the time, a chart, a calculation, help choosing or to save a note, and I will show you the tools.",
        "missing": "I would use the {tool} tool for that, but it is not enabled for this agent.",
        "clock": "My instructions say: {now}",
        "no_clock": "I do not know the time: the clock capability is not enabled for this agent.",
        "results": "Here is what the tools returned:",
        "ok": "- {tool}: {result}",
        "failed": "- {tool} did not work: {result}",
        "question": "Which option do you prefer?",
        "chart_title": "Demo chart",
        "series": "Demo series",
    },
    "es": {
        "note": (
            "Soy el modelo de demostración sin conexión, así que mis respuestas son fijas y gratuitas. Para usar "
            "un modelo real, añade una clave de API en Settings → Model profiles, o ejecuta "
            "`manage.py platform_bootstrap --openai-api-key ...`."
        ),
        "hello": "¡Hola! Escribiste: «{prompt}».",
        "try": "Pídeme la hora, un gráfico, un cálculo, ayuda para elegir o guardar una nota, y te enseñaré las herramientas.",
        "missing": "Usaría la herramienta {tool} para eso, pero no está activada en este agente.",
        "clock": "Mis instrucciones dicen: {now}",
        "no_clock": "No sé la hora: la capability clock no está activada en este agente.",
        "results": "Esto es lo que devolvieron las herramientas:",
        "ok": "- {tool}: {result}",
        "failed": "- {tool} no funcionó: {result}",
        "question": "¿Qué opción prefieres?",
        "chart_title": "Gráfico de demostración",
        "series": "Serie de demostración",
    },
}


def _t(spanish: bool) -> dict[str, str]:
    return _TEXT["es" if spanish else "en"]


def _excerpt(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ------------------------------------------------------------------------------------ reading messages


def _prompt_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return " ".join(item for item in part.content if isinstance(item, str))


def _latest_prompt_index(messages: list[ModelMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts):
            return index
    return -1


def _latest_prompt(messages: list[ModelMessage]) -> str:
    index = _latest_prompt_index(messages)
    if index < 0:
        return ""
    parts = messages[index].parts
    return " ".join(_prompt_text(p) for p in parts if isinstance(p, UserPromptPart)).strip()


def _results_since_prompt(messages: list[ModelMessage]) -> list[tuple[str, str, bool]]:
    """(tool name, result text, succeeded) for every tool result after the latest user prompt."""
    results = []
    for message in messages[_latest_prompt_index(messages) + 1 :]:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                results.append((part.tool_name, part.model_response_str(), part.outcome == "success"))
            elif isinstance(part, RetryPromptPart):
                content = part.content if isinstance(part.content, str) else json.dumps(part.content, default=str)
                results.append((part.tool_name or "tool", content, False))
    return results


_CLOCK_LINE = re.compile(r"Current date and time: [^\n]*?\)")


def _clock_line(messages: list[ModelMessage]) -> str | None:
    """What the clock capability put in the latest instructions ("Current date and time: … (zone, UTC+0100)")."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions:
            found = _CLOCK_LINE.search(message.instructions)
            return found.group(0) if found else None
    return None


def _time_answer(messages: list[ModelMessage], detected: Intent) -> list[str]:
    if "time" not in detected.intents:
        return []
    text = _t(detected.spanish)
    now = _clock_line(messages)
    return [text["clock"].format(now=now) if now else text["no_clock"]]


def _words(text: str) -> int:
    return len(text.split())


def estimate_input_tokens(messages: list[ModelMessage]) -> int:
    """Words in everything the model is sent: instructions, system prompts, prompts, tool results."""
    total = 0
    for message in messages:
        if isinstance(message, ModelRequest):
            total += _words(message.instructions or "")
            for request_part in message.parts:
                if isinstance(request_part, SystemPromptPart):
                    total += _words(request_part.content)
                elif isinstance(request_part, UserPromptPart):
                    total += _words(_prompt_text(request_part))
                elif isinstance(request_part, ToolReturnPart):
                    total += _words(request_part.model_response_str())
                elif isinstance(request_part, RetryPromptPart):
                    total += _words(str(request_part.content))
        elif isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, TextPart):
                    total += _words(part.content)
                elif isinstance(part, ToolCallPart):
                    total += 1 + _words(part.args_as_json_str())
    return total


# ----------------------------------------------------------------------------------- fitting arguments


def _plain_value(name: str, schema: dict[str, Any]) -> Any:
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if "zone" in name or name in ("tz",):
        return "UTC"
    return "demo"


def fit_arguments(tool: ToolDefinition, preferred: dict[str, Any]) -> dict[str, Any]:
    """Keep the preferred arguments the tool's schema declares, and fill its other required ones."""
    schema = tool.parameters_json_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    if not properties:
        return dict(preferred) if schema.get("additionalProperties", True) is not False else {}
    args = {key: value for key, value in preferred.items() if key in properties}
    for name in schema.get("required") or []:
        if name not in args:
            args[name] = _plain_value(name, properties.get(name) or {})
    return args


def _options_from(prompt: str, spanish: bool) -> list[str]:
    """"tea or coffee" → ["tea", "coffee"]; otherwise two generic options."""
    match = re.search(r"(\w+)\s+(?:or|o|u)\s+(\w+)", prompt, re.UNICODE | re.IGNORECASE)
    if match and match.group(1).lower() != match.group(2).lower():
        return [match.group(1)[:50], match.group(2)[:50]]
    return ["Opción A", "Opción B"] if spanish else ["Option A", "Option B"]


def _python_for(expression: str | None) -> str:
    if expression:
        code = expression.replace("×", "*").replace("÷", "/").replace("^", "**")
        return f"result = {code}\nprint(result)"
    return "result = sum(range(1, 11))\nprint(result)"


def _preferred_arguments(intent: str, tool: ToolDefinition, prompt: str, detected: Intent) -> dict[str, Any]:
    text = _t(detected.spanish)
    if intent == "chart":
        return {
            "title": text["chart_title"],
            "kind": "bar",
            "chart_type": "bar",
            "x_values": ["Mon", "Tue", "Wed", "Thu", "Fri"],
            "series": [{"name": text["series"], "values": [3, 5, 2, 6, 4]}],
        }
    if intent == "calculation":
        return {"code": _python_for(detected.expression)}
    if intent == "note":
        return {"path": "notes.md", "content": f"- {prompt.strip()}\n"}
    # choice
    options = _options_from(prompt, detected.spanish)
    question = {
        "header": "Choice" if not detected.spanish else "Elección",
        "question": text["question"],
        "options": [{"label": option} for option in options],
        "multi_select": False,
    }
    properties = (tool.parameters_json_schema or {}).get("properties") or {}
    if "questions" in properties:
        return {"questions": [question]}
    return {"question": text["question"], "options": options}


# ------------------------------------------------------------------------------------------- decision


@dataclass(frozen=True)
class Plan:
    """What the demo model answers: either text or tool calls (never both, so the turn is unambiguous)."""

    text: str | None
    calls: tuple[ToolCallPart, ...] = ()


# The follow-up model's request (capabilities/follow_ups) starts its instructions with this marker.
FOLLOW_UPS_MARKER = "[follow-ups]"
_FOLLOW_UPS = {
    "en": ("What else can you do?", "Draw me a chart of sample sales", "What time is it in Tokyo?"),
    "es": ("¿Qué más puedes hacer?", "Dibújame un gráfico de ventas de ejemplo", "¿Qué hora es en Tokio?"),
}


def _is_follow_up_request(messages: list[ModelMessage]) -> bool:
    first = messages[0] if messages else None
    return isinstance(first, ModelRequest) and any(
        isinstance(part, SystemPromptPart) and part.content.startswith(FOLLOW_UPS_MARKER) for part in first.parts)


def plan(messages: list[ModelMessage], info: AgentInfo) -> Plan:
    prompt = _latest_prompt(messages)
    if _is_follow_up_request(messages):  # three next steps in the person's language, one per line
        asked = prompt.split("The answer they got:")[0]
        return Plan("\n".join(_FOLLOW_UPS["es" if detect(asked).spanish else "en"]))
    detected = detect(prompt)
    text = _t(detected.spanish)
    results = _results_since_prompt(messages)
    if results:
        lines = [*_time_answer(messages, detected), text["results"]]
        for tool_name, result, ok in results:
            lines.append(text["ok" if ok else "failed"].format(tool=tool_name, result=_excerpt(result, 300)))
        return Plan("\n".join(lines) + "\n\n" + text["note"])

    offered = {tool.name: tool for tool in info.function_tools}
    turn = sum(1 for message in messages if isinstance(message, ModelResponse))
    calls: list[ToolCallPart] = []
    missing: list[str] = []
    for intent in detected.intents:
        if not INTENT_TOOLS[intent]:
            continue  # answered from the instructions
        tool = next((offered[name] for name in INTENT_TOOLS[intent] if name in offered), None)
        if tool is None:
            missing.append(INTENT_TOOLS[intent][0])
            continue
        args = fit_arguments(tool, _preferred_arguments(intent, tool, prompt, detected))
        calls.append(ToolCallPart(tool.name, args, tool_call_id=f"demo_{turn}_{len(calls)}_{tool.name}"))
    if calls:
        return Plan(None, tuple(calls))

    lines = [text["hello"].format(prompt=_excerpt(prompt))] if prompt else []
    lines += _time_answer(messages, detected)
    lines += [text["missing"].format(tool=name) for name in missing]
    if not missing and "time" not in detected.intents:
        lines.append(text["try"])
    return Plan(" ".join(lines) + "\n\n" + text["note"])


def _output_tool_call(info: AgentInfo, answer: str, messages: list[ModelMessage]) -> ToolCallPart | None:
    """When the agent demands structured output, answer through its first output tool."""
    if info.allow_text_output or not info.output_tools:
        return None
    tool = info.output_tools[0]
    args = fit_arguments(tool, {"response": answer, "answer": answer, "text": answer, "result": answer})
    turn = sum(1 for message in messages if isinstance(message, ModelResponse))
    return ToolCallPart(tool.name, args, tool_call_id=f"demo_{turn}_output")


def word_chunks(text: str) -> list[str]:
    """"Hello big world" → ["Hello ", "big ", "world"]: concatenated they give the text back exactly."""
    return re.findall(r"\s*\S+\s*", text) if text else []


# ---------------------------------------------------------------------------------------- the model


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    decided = plan(messages, info)
    parts: list[Any]
    if decided.calls:
        parts = list(decided.calls)
        output = sum(1 + _words(call.args_as_json_str()) for call in decided.calls)
    else:
        answer = decided.text or ""
        output_call = _output_tool_call(info, answer, messages)
        parts = [output_call] if output_call else [TextPart(answer)]
        output = _words(answer)
    usage = RequestUsage(input_tokens=estimate_input_tokens(messages), output_tokens=output)
    return ModelResponse(parts=parts, usage=usage, model_name=DEMO_MODEL_NAME)


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    decided = plan(messages, info)
    calls = list(decided.calls)
    if not calls:
        output_call = _output_tool_call(info, decided.text or "", messages)
        if output_call is None:
            for chunk in word_chunks(decided.text or ""):
                yield chunk
            return
        calls = [output_call]
    for index, call in enumerate(calls):
        # Name and id first, then the arguments in two pieces, as real providers stream them.
        arguments = call.args_as_json_str()
        middle = len(arguments) // 2
        yield {index: DeltaToolCall(name=call.tool_name, json_args=arguments[:middle], tool_call_id=call.tool_call_id)}
        yield {index: DeltaToolCall(json_args=arguments[middle:])}


class DemoModel(FunctionModel):
    """FunctionModel whose streamed responses count input words too (FunctionModel's stream starts at 50)."""

    costs_nothing = True  # read by governance.pricing.is_free: the offline demo model is never billed

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async with super().request_stream(messages, model_settings, model_request_parameters, run_context) as response:
            # Replaces FunctionStreamedResponse's fixed starting guess before any delta is read; output tokens
            # are then added per streamed word by FunctionStreamedResponse itself.
            response._usage = RequestUsage(input_tokens=estimate_input_tokens(messages))
            yield response

    @property
    def system(self) -> str:
        return DEMO_PROVIDER_NAME


def demo_model(*, model_name: str | None = None, settings: ModelSettings | None = None) -> DemoModel:
    return DemoModel(respond, stream_function=stream, model_name=model_name or DEMO_MODEL_NAME, settings=settings)
