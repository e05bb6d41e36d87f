"""A drawing (capabilities/visuals) on a visitor's surface, live and reopened (embeds.frames, embeds.services): the
drawing is the answer, like a chart, so under the steps toggle it reaches a visitor even when a step's arguments and
results are hidden — as its kind, title, markup and the images it shows, never the image sources it was drawn from
or the render report written for the model. Its arguments stream only where arguments are shown; with steps hidden
nothing of it leaves the server."""

from __future__ import annotations

import json

import pytest

from agents.models import Message, Run, ToolCall
from embeds import services
from embeds.frames import Toggles, TurnFilter
from tests import factories

VISITOR = "cd" * 16
SVG = '<svg xmlns="http://www.w3.org/2000/svg"><rect width="4" height="4"/><image href="{{image:logo}}"/></svg>'
PIXEL = "data:image/png;base64,iVBORw0KGgo="
DRAW_ARGS = {"kind": "svg", "title": "Flow", "content": SVG,
             "images": [{"name": "logo", "source": "/workspace/INTERNAL/logo.png"}]}
DRAW_RESULT = {"kind": "visual", "visual_id": "c1", "visual_kind": "svg", "title": "Flow", "images": {"logo": PIXEL},
               "checked": False, "errors": ["MODEL-ONLY ERROR"],
               "message": "Drawn; not checked: MODEL-ONLY MESSAGE"}
DRAWING = {"kind": "visual", "visual_id": "c1", "visual_kind": "svg", "title": "Flow", "content": SVG,
           "images": {"logo": PIXEL}}
HIDDEN = Toggles(show_tool_steps=True, show_tool_results=False)
SHOWN = Toggles(show_tool_steps=True, show_tool_results=True)


def frame(kind: str, **data) -> dict:
    return {"type": kind, "data": data}


def streamed(toggles: Toggles, tool_name: str = "draw", args=None, result=None) -> list[dict]:
    """What a visitor receives for one drawing call, from its part_start to its result."""
    args = DRAW_ARGS if args is None else args
    text = json.dumps(args)
    f = TurnFilter(toggles)
    runner = [frame("model_request_start"),
              frame("part_start", index=0, part_type="tool-call", tool_name=tool_name, tool_call_id="c1"),
              frame("tool_call_delta", index=0, args_delta=text[:30]),
              frame("tool_call_delta", index=0, args_delta=text[30:]),
              frame("tool_call", tool_call_id="c1", tool_name=tool_name, args=args),
              frame("tool_result", tool_call_id="c1", content=DRAW_RESULT if result is None else result, ok=True)]
    return [out for f_in in runner for out in f.apply(f_in)]


def test_a_drawing_reaches_a_visitor_whose_page_hides_results_as_the_drawing_alone():
    sent = streamed(HIDDEN)
    assert [f["type"] for f in sent] == ["model_request_start", "part_start", "tool_call_delta", "tool_call",
                                         "tool_result"]
    # The step names its tool as it starts (its tool_call frame does too, under the same toggle).
    assert sent[1]["data"] == {"index": 0, "part_type": "tool-call", "tool_name": "draw", "tool_call_id": "c1"}
    # While it is written: its kind and markup alone, as arguments of their own (never the title or image sources).
    assert json.loads(sent[2]["data"]["args_delta"] + '"}') == {"kind": "svg", "content": SVG}
    assert sent[3]["data"] == {"tool_call_id": "c1", "tool_name": "draw"}  # no arguments
    assert sent[4]["data"] == {"tool_call_id": "c1", "content": DRAWING}
    text = json.dumps(sent)
    assert "INTERNAL" not in text and "MODEL-ONLY" not in text
    # With steps hidden nothing of it leaves the server, not even the start that names it.
    assert [f["type"] for f in streamed(Toggles(show_tool_steps=False))] == ["model_request_start"]


TRICKY = 'é "quoted" \\ back\\slash \n😀 </script> \u2028'


@pytest.mark.parametrize("order", [("kind", "title", "content", "images"), ("images", "title", "kind", "content")])
def test_a_drawing_streams_to_a_hidden_arguments_visitor_as_kind_and_markup_at_every_cut(order):
    args = {"kind": "html", "title": "T INTERNAL", "content": TRICKY * 3,
            "images": [{"name": "logo", "source": "/workspace/INTERNAL/x.png"}]}
    text = json.dumps({k: args[k] for k in order})
    for step in (1, 7):
        f = TurnFilter(HIDDEN)
        f.apply(frame("part_start", index=2, part_type="tool-call", tool_name="draw", tool_call_id="c1"))
        written = ""
        for at in range(0, len(text), step):
            for out in f.apply(frame("tool_call_delta", index=2, args_delta=text[at:at + step])):
                written += out["data"]["args_delta"]
                # Every prefix reads, with the content so far a prefix of the drawing.
                content = json.loads(written + '"}')["content"]
                if content and "\ud800" <= content[-1] <= "\udbff":
                    content = content[:-1]  # the first half of a pair whose second half is on its way
                assert args["content"].startswith(content)
        assert json.loads(written + '"}') == {"kind": "html", "content": args["content"]}
        assert "INTERNAL" not in written


def test_a_drawing_whose_kind_comes_after_its_markup_is_drawn_when_complete_and_other_calls_never_stream():
    f = TurnFilter(HIDDEN)
    f.apply(frame("part_start", index=0, part_type="tool-call", tool_name="draw", tool_call_id="c1"))
    assert f.apply(frame("tool_call_delta", index=0, args_delta=json.dumps({"content": SVG, "kind": "svg"}))) == []
    f.apply(frame("part_start", index=1, part_type="tool-call", tool_name="lookup", tool_call_id="c2"))
    assert f.apply(frame("tool_call_delta", index=1, args_delta='{"kind": "svg", "content": "INTERNAL"}')) == []
    f.apply(frame("part_start", index=2, part_type="tool-call", tool_name="revise_visual", tool_call_id="c3"))
    assert f.apply(frame("tool_call_delta", index=2, args_delta='{"kind": "svg", "content": "INTERNAL"}')) == []


def test_a_revision_reaches_a_visitor_with_its_full_markup_from_its_result():
    revised = {**DRAW_RESULT, "visual_id": "c2", "content": SVG.replace("4", "8"), "revision_of": "c1"}
    sent = streamed(HIDDEN, "revise_visual", {"visual_id": "c1", "edits": [{"old_text": "4", "new_text": "8"}]},
                    revised)
    assert sent[-1]["data"]["content"] == {**DRAWING, "visual_id": "c2", "content": SVG.replace("4", "8")}


def test_an_image_that_is_not_an_inline_image_never_reaches_a_visitor():
    hostile = {**DRAW_RESULT, "images": {"logo": "https://internal.example/INTERNAL.png", "x": "javascript:alert(1)",
                                         "ok": PIXEL}}
    assert streamed(HIDDEN, result=hostile)[-1]["data"]["content"]["images"] == {"ok": PIXEL}
    # A retry answers with text for the model: no drawing, so nothing after the step's start and call.
    assert [f["type"] for f in streamed(HIDDEN, result="The drawing cannot be shown: INTERNAL")] == [
        "model_request_start", "part_start", "tool_call_delta", "tool_call"]


def test_where_arguments_are_shown_the_drawing_streams_as_it_is_written():
    sent = streamed(SHOWN)
    assert sent[1]["data"]["tool_name"] == "draw" and sent[1]["data"]["tool_call_id"] == "c1"
    deltas = [f["data"]["args_delta"] for f in sent if f["type"] == "tool_call_delta"]
    assert "".join(deltas) == json.dumps(DRAW_ARGS)
    assert sent[-1]["data"]["content"] == DRAW_RESULT  # results shown: the result as it is


@pytest.mark.django_db
def test_a_reopened_thread_replays_the_drawing_to_a_visitor_whose_page_hides_results(org, owner, builder):
    agent = factories.published_agent(org, owner, name="Explainer")
    page = factories.embed(agent, kind="page", created_by=builder, show_tool_steps=True, show_tool_results=False)
    conversation = services.get_or_create_conversation(page, VISITOR)
    run = Run.objects.create(organization_id=org.pk, agent=agent, surface="embed", embed_id=page.pk,
                             version=agent.environments.get(name="production").version, prompt="Draw the flow",
                             conversation=conversation, status="completed")
    Message.objects.create(conversation=conversation, run=run, role="user", content="Draw the flow")
    answer = Message.objects.create(conversation=conversation, run=run, role="assistant", content="Here it is.",
                                    parts=[{"type": "tool", "tool_call_id": "c1"},
                                           {"type": "text", "text": "Here it is."}])
    ToolCall.objects.create(run=run, message=answer, tool_call_id="c1", tool_name="draw", args=DRAW_ARGS,
                            result=DRAW_RESULT, status="ok")

    turn = services.history_messages(conversation, page)[1]
    call = turn["parts"][0]["call"]
    assert call == {"id": "c1", "name": "draw", "args": {}, "result": DRAWING, "status": "ok"}
    assert "INTERNAL" not in json.dumps(turn) and "MODEL-ONLY" not in json.dumps(turn)

    page.show_tool_steps = False
    page.save(update_fields=["show_tool_steps"])
    assert services.history_messages(conversation, page)[1]["parts"] == [{"type": "text", "text": "Here it is."}]


@pytest.mark.django_db
def test_both_embeds_name_the_map_tile_origin_a_drawings_frame_admits_and_nothing_else(client, widget, page,
                                                                                       settings):
    settings.VISUAL_MAP_TILES = "https://tiles.example.org/{z}/{x}/{y}.png"
    script = client.get(f"/api/v1/embed/{widget.public_key}/widget.js").content.decode()
    assert '"mapTiles": "https://tiles.example.org"' in script
    html = client.get(f"/e/{page.public_key}").content.decode()
    assert '<meta name="agenticos-map-tiles" content="https://tiles.example.org">' in html
    assert "console/visuals.js" in html
    settings.VISUAL_MAP_TILES = "https://{s}.tiles.example.org/{z}/{x}/{y}.png"  # more than one host: none
    assert '"mapTiles": ""' in client.get(f"/api/v1/embed/{widget.public_key}/widget.js").content.decode()
