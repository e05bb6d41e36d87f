"""What leaves the server on a public socket: the runner's frames, filtered by the page's toggles.

A filter on what the server sends, not on what the page draws: reasoning hidden with CSS is reasoning
sitting in a stranger's devtools. A frame type not listed here never leaves (allow-list).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from embeds.drawing_stream import DrawingStream

EMPTY_TURN_MESSAGE = "The assistant did not produce an answer. Please try again."
# Not "try again later": asking again is what piled the same call up in the approval queue. The turn is over
# and the conversation goes on; the waiting call is not asked for twice (embeds.services.waiting_note).
PARKED_MESSAGE = (
    "This needs a decision from a person before it can go on, so that part of the answer will not arrive "
    "here. You can keep asking about anything else."
)

# A chart is drawn for the person reading (capabilities/charts: "so the user can see them"), not written for the
# model: the spec says a chart opens wherever it is, because a picture nobody can see is not an answer
# (surfaces "Qué aspecto tiene un turno"). So its spec travels under the steps toggle even when results are
# hidden — rebuilt from the chart fields only, never the raw tool result.
CHART_TOOLS = {"create_chart"}
CHART_FIELDS = ("kind", "version", "chart_type", "title", "x_label", "y_label", "x_values", "series")

# A drawing (capabilities/visuals) is the answer in the same way: what the person is shown, not what the model is
# told. Under the steps toggle a visitor gets the drawing — its kind, title, markup and the images it shows — rebuilt
# from those fields only: never the image sources it was drawn from (workspace paths, addresses) nor the render
# report written for the model. Where a step's arguments are hidden, a `draw` still grows while it is written: its
# kind and markup alone, re-encoded (embeds/drawing_stream.py).
VISUAL_TOOLS = {"draw", "revise_visual"}

STEP_PART_TYPES = {"tool-call", "builtin-tool-call", "builtin-tool-return", "tool_call", "builtin_tool_call"}
THINKING_PART_TYPES = {"thinking"}


@dataclass(frozen=True)
class Toggles:
    show_tool_steps: bool = True
    show_tool_results: bool = False
    show_thinking: bool = False

    @classmethod
    def of(cls, embed: Any) -> Toggles:
        steps = bool(embed.show_tool_steps)
        # Results without steps are impossible whatever the row says: there is no step to open.
        return cls(
            show_tool_steps=steps,
            show_tool_results=steps and bool(embed.show_tool_results),
            show_thinking=bool(embed.show_thinking),
        )


def chart_spec(result: Any) -> dict | None:
    """The drawable chart in a create_chart result, or None when it is not one."""
    if not isinstance(result, dict) or result.get("kind") != "chart" or not isinstance(result.get("series"), list):
        return None
    spec = {k: result[k] for k in CHART_FIELDS if k in result}
    spec["series"] = [
        {"name": str(s.get("name", "")), "values": s.get("values") if isinstance(s.get("values"), list) else []}
        for s in result["series"]
        if isinstance(s, dict)
    ]
    return spec


def visual_spec(tool_name: str | None, args: Any, result: Any) -> dict | None:
    """The drawing a draw / revise_visual call showed, or None when it drew nothing (a retry, a refusal)."""
    if tool_name not in VISUAL_TOOLS or not isinstance(result, dict) or result.get("kind") != "visual":
        return None
    # A draw's markup is its argument; a revision's full markup is in its result.
    content = result.get("content") if tool_name == "revise_visual" else (args or {}).get("content") if isinstance(
        args, dict) else None
    if not isinstance(content, str):
        return None
    images = result.get("images")
    images = images if isinstance(images, dict) else {}
    return {
        "kind": "visual",
        "visual_id": str(result.get("visual_id") or ""),
        "visual_kind": str(result.get("visual_kind") or ""),
        "title": str(result.get("title") or ""),
        "content": content,
        # Only what the drawing shows: data URIs by the names it uses.
        "images": {str(k): v for k, v in images.items() if isinstance(v, str) and v.startswith("data:image/")},
    }


def visible_result(toggles: Toggles, tool_name: str | None, result: Any, args: Any = None) -> tuple[bool, Any]:
    """(whether a visitor gets a result at all, what they get) for one finished call."""
    if not toggles.show_tool_steps:
        return False, None
    if toggles.show_tool_results:
        return True, result
    if tool_name in VISUAL_TOOLS:
        drawing = visual_spec(tool_name, args, result)
        return (drawing is not None), drawing
    spec = chart_spec(result) if tool_name in CHART_TOOLS else None
    return (spec is not None), spec


@dataclass
class TurnFilter:
    toggles: Toggles
    hidden_parts: set[int] = field(default_factory=set)
    call_names: dict[str, str] = field(default_factory=dict)
    drawing_args: dict[str, Any] = field(default_factory=dict)  # a drawing call's arguments, for its result
    # part index → a `draw` call's drawing as it is written, for a visitor who is not shown its arguments
    drawings: dict[int, DrawingStream] = field(default_factory=dict)
    parked: bool = False
    finished: bool = False
    answered: bool = False
    # The turn's run, told in `complete`: what the visitor's 👍/👎 on this answer names (embeds.services.visitor_feedback).
    run_id: str = ""

    def apply(self, frame: dict) -> list[dict]:
        """The frames (zero or more) a visitor receives for one runner frame."""
        kind = frame.get("type")
        data = frame.get("data") or {}
        t = self.toggles
        if self.finished:
            return []
        if kind == "model_request_start":
            # Part indices count from zero again in every model response.
            self.hidden_parts.clear()
            self.drawings.clear()
            return [_frame(kind, {})]
        if kind == "part_start":
            index = data.get("index")
            if index == 0:
                self.hidden_parts.clear()  # a new model response
                self.drawings.clear()
            if isinstance(index, int):
                self.drawings.pop(index, None)
            part_type = str(data.get("part_type", ""))
            visible = part_type == "text" or (
                (part_type in THINKING_PART_TYPES and t.show_thinking)
                or (part_type in STEP_PART_TYPES and t.show_tool_steps)
            )
            if not visible:
                # Not even the announcement: it alone says the agent reasoned.
                if isinstance(index, int):
                    self.hidden_parts.add(index)
                return []
            out = {"index": index, "part_type": part_type}
            if part_type in STEP_PART_TYPES and data.get("tool_name"):
                # Which tool, as its tool_call frame says under the same toggle: a drawing is drawn as it is written.
                out.update(tool_name=str(data["tool_name"]), tool_call_id=str(data.get("tool_call_id") or ""))
                if data["tool_name"] == "draw" and not t.show_tool_results and isinstance(index, int):
                    self.drawings[index] = DrawingStream()
            return [_frame(kind, out)]
        if kind == "text_delta":
            if data.get("index") in self.hidden_parts:
                return []
            self.answered = self.answered or bool(data.get("content"))
            return [_frame(kind, {"index": data.get("index"), "content": str(data.get("content", ""))})]
        if kind == "thinking_delta":
            if not t.show_thinking or data.get("index") in self.hidden_parts:
                return []
            return [_frame(kind, {"index": data.get("index"), "content": str(data.get("content", ""))})]
        if kind == "call_tools_start":
            return [_frame(kind, {})] if t.show_tool_steps else []
        if kind == "tool_call":
            if not t.show_tool_steps:
                return []
            out = {"tool_call_id": data.get("tool_call_id"), "tool_name": data.get("tool_name")}
            self.call_names[str(data.get("tool_call_id"))] = str(data.get("tool_name") or "")
            if data.get("tool_name") in VISUAL_TOOLS:
                self.drawing_args[str(data.get("tool_call_id"))] = data.get("args")
            if t.show_tool_results:
                out["args"] = data.get("args")
            return [_frame(kind, out)]
        if kind == "tool_call_delta":
            index = data.get("index")
            if index in self.hidden_parts:
                return []
            if not t.show_tool_results:
                # Only a drawing's kind and markup, re-encoded (embeds/drawing_stream.py): the drawing is the answer.
                drawing = self.drawings.get(index) if isinstance(index, int) else None
                piece = drawing.feed(str(data.get("args_delta") or "")) if drawing is not None else ""
                return [_frame(kind, {"index": index, "args_delta": piece})] if piece else []
            return [_frame(kind, {"index": index, "args_delta": data.get("args_delta")})]
        if kind == "tool_result":
            call_id = str(data.get("tool_call_id"))
            name = self.call_names.get(call_id)
            shown, content = visible_result(t, name, data.get("content"), self.drawing_args.pop(call_id, None))
            if not shown:
                return []
            return [_frame(kind, {"tool_call_id": data.get("tool_call_id"), "content": content})]
        if kind == "final_result_start":
            return [_frame(kind, {"tool_name": data.get("tool_name")})] if t.show_tool_steps else [_frame(kind, {})]
        if kind == "final_result":
            self.answered = self.answered or bool(data.get("output"))
            return [_frame(kind, {"output": "" if self.parked else data.get("output", "")})]
        if kind == "resumed":
            return [self._resumed(data)]
        if kind == "tool_approval_required":
            # A visitor cannot approve a side effect on someone else's organization: the run parks.
            self.parked = True
            return []
        if kind == "complete":
            self.finished = True
            if self.parked or (data.get("status") == "awaiting_approval"):
                return [_frame("error", {"message": PARKED_MESSAGE, "code": "needs_approval"})]
            if not self.answered:
                # A turn that produced nothing is something the visitor should be told, not a blank bubble.
                return [_frame("error", {"message": EMPTY_TURN_MESSAGE, "code": "empty_turn"})]
            # Never usage: what a run cost is the operator's business.
            return [_frame("complete", {"run_id": self.run_id} if self.run_id else {})]
        if kind == "error":
            self.finished = True
            out = {"message": str(data.get("message") or "Something went wrong.")}
            if data.get("code"):
                out["code"] = str(data["code"])
            return [_frame("error", out)]
        # user_prompt_processed (the assembled prompt is operator text), ask_user, message_saved,
        # subagent_* and anything new: never on a public socket.
        return []


    def _resumed(self, data: dict) -> dict:
        """A lost worker's run goes on elsewhere from its last checkpoint (agents/runner/recovery.py): the visitor
        redraws the turn as that step left it — what streamed after it is streamed again. Its parts under the
        same toggles as the live frames: text always, reasoning when shown, a step only by its call's id and the
        name this socket was told (its arguments and result already arrived, or never will)."""
        self.hidden_parts.clear()
        self.drawings.clear()
        parts: list[dict] = []
        for part in data.get("parts") or []:
            kind = part.get("type")
            if kind == "text":
                parts.append({"type": "text", "text": str(part.get("text", ""))})
            elif kind == "thinking" and self.toggles.show_thinking:
                parts.append({"type": "thinking", "text": str(part.get("text", ""))})
            elif kind == "tool" and self.toggles.show_tool_steps:
                call_id = str(part.get("tool_call_id") or "")
                parts.append({"type": "tool", "tool_call_id": call_id, "tool_name": self.call_names.get(call_id, "")})
        # What the visitor had read of the lost stream is gone: only the checkpoint's text counts as an answer.
        self.answered = any(p["type"] == "text" and p["text"] for p in parts)
        return _frame("resumed", {"parts": parts})


def _frame(kind: str, data: dict) -> dict:
    return {"type": kind, "data": data}
