"""visuals: draw / revise_visual / read_visual through a real pydantic-ai Agent on real Run rows.

Every retry names what to change and leaves no visual behind; revisions are exact replacements, each its own
visual; a reopened conversation finds its visuals in the transcript (and never another organization's or
another conversation's); `draw` waits for the watching console's report only when a person watches web chat,
and only that person's report answers it; images come from the workspace as data URIs, addresses are refused.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agents.models import Conversation, Run, ToolCall
from capabilities.visuals import reports
from tests import factories
from tests.capabilities.helpers import Outcome, Script, agent_for, deps, spec

pytestmark = pytest.mark.django_db(transaction=True)
VISUALS = spec({"id": "visuals"})
SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 40"><text x="4" y="24">Old label</text></svg>'
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@pytest.fixture
def setup(org, member, builder):
    agent = factories.published_agent(org, builder, name="Explainer", capabilities=[{"id": "visuals"}])
    return org, member, agent


def run_for(org, user, agent, *, surface: str = "web", conversation: Conversation | None = None) -> Run:
    return Run.objects.create(organization=org, agent=agent, version=agent.versions.first(), surface=surface,
                              user=user, conversation=conversation)


def go(run: Run, calls: list[tuple[str, dict[str, Any]]], *, watching: bool = False, **scratch: Any) -> Outcome:
    run_deps = deps(run_id=str(run.pk), organization_id=str(run.organization_id), agent_id=str(run.agent_id),
                    user_id=run.user_id, surface=run.surface, can_ask_user=watching,
                    conversation_id=str(run.conversation_id) if run.conversation_id else None)
    run_deps.scratch.update(scratch)
    script = Script(calls)
    result = agent_for(VISUALS, run_deps, script).run_sync("go", deps=run_deps)
    return Outcome(messages=result.all_messages(), script=script, output=result.output)


def draw(content: str = SVG, kind: str = "svg", **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("draw", {"kind": kind, "title": "Pipeline", "content": content, **extra})


def store_turn(run: Run, outcome: Outcome, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Write the turn's visual tool calls the way the runner's transcript does (args, result as returned)."""
    answers = iter(outcome.returns)
    for step, (name, args) in enumerate(calls):
        ToolCall.objects.create(run=run, tool_call_id=f"call-{step}", tool_name=name, args=args,
                                result=next(answers), status=ToolCall.Status.OK)


def test_a_drawing_answers_its_id_and_says_nobody_checked_it_when_nobody_watches(setup):
    org, person, agent = setup
    outcome = go(run_for(org, person, agent, surface="api"), [draw()])
    assert outcome.retries == []
    result = outcome.returns[0]
    assert (result["kind"], result["visual_id"], result["visual_kind"], result["title"]) == (
        "visual", "call-0", "svg", "Pipeline")
    assert result["checked"] is False and result["errors"] == []
    assert "not checked" in result["message"]
    assert "content" not in result  # a draw's drawing is its argument; the transcript keeps it once


def test_a_drawing_may_load_the_deployments_library_bundle(setup):
    org, person, agent = setup
    page = ('<canvas id="c"></canvas><script src="/apps/lib/chart.umd.min.js"></script>'
            '<script type="module">import * as THREE from "/apps/lib/three.module.min.js";</script>')
    outcome = go(run_for(org, person, agent, surface="api"), [draw(page, kind="html")])
    assert outcome.retries == [] and outcome.returns[0]["visual_id"] == "call-0"


@pytest.mark.parametrize(("kind", "content", "extra", "named"), [
    ("svg", "   ", {}, "content is empty"),
    ("svg", "<p>Legend</p>" + SVG, {}, "an svg drawing is one <svg>…</svg> element and nothing around it"),
    ("svg", "<svg><g><text>x</svg>", {}, "the SVG is not well-formed XML"),
    ("html", '<script src="https://cdn.jsdelivr.net/npm/chart.js"></script>', {},
     "it loads https://cdn.jsdelivr.net/npm/chart.js from another site"),
    ("html", '<div style="background:url(//tracker.example/p.gif)"></div>', {},
     "it loads //tracker.example/p.gif from another site"),
    ("html", "<style>@import 'https://fonts.example/a.css';</style>", {}, "it loads https://fonts.example/a.css"),
    ("html", '<script type="module">import * as THREE from "https://unpkg.com/three";</script>', {},
     "it loads https://unpkg.com/three from another site"),
    ("svg", SVG.replace("</svg>", '<image href="{{image:logo}}"/></svg>'), {},
     "the drawing uses {{image:logo}} but images has no such name"),
    ("html", "<p>seven</p>", {"images": [{"name": f"i{n}", "source": "/workspace/a.png"} for n in range(7)]},
     "7 images; a drawing takes at most 6"),
    ("html", "<p>x</p>", {"images": [{"name": "my logo", "source": "/workspace/a.png"}]},
     "image names ['my logo'] are not usable"),
    ("html", "<p>x</p>", {"images": [{"name": "a", "source": "/workspace/a.png"},
                                     {"name": "a", "source": "/workspace/b.png"}]}, "two images share a name"),
])
def test_a_drawing_that_cannot_be_shown_is_a_retry_naming_what_to_change_and_leaves_no_visual(
        setup, kind, content, extra, named):
    org, person, agent = setup
    outcome = go(run_for(org, person, agent, surface="api"),
                 [draw(content, kind=kind, **extra), ("read_visual", {"visual_id": "call-0"})])
    assert named in outcome.retries[0]
    assert outcome.returns == ["There is no visual 'call-0' in this conversation."]


def test_a_drawing_past_artifact_max_bytes_is_a_retry(setup, settings):
    settings.ARTIFACT_MAX_BYTES = 2048
    org, person, agent = setup
    big = SVG.replace("Old label", "y" * 3000)
    outcome = go(run_for(org, person, agent, surface="api"), [draw(big)])
    assert "the most a drawing can be is 2,048" in outcome.retries[0]


def test_a_revision_is_an_exact_replacement_and_a_visual_of_its_own(setup):
    org, person, agent = setup
    edit = {"old_text": "Old label", "new_text": "New label"}
    outcome = go(run_for(org, person, agent, surface="api"), [
        draw(), ("revise_visual", {"visual_id": "call-0", "edits": [edit], "title": "Pipeline v2"}),
        ("read_visual", {"visual_id": "call-0"}), ("read_visual", {"visual_id": "call-1"})])
    assert outcome.retries == []
    revision = outcome.returns[1]
    assert (revision["visual_id"], revision["revision_of"], revision["title"]) == ("call-1", "call-0", "Pipeline v2")
    assert revision["content"] == SVG.replace("Old label", "New label")
    assert outcome.returns[2] == f"call-0 — svg, 'Pipeline', images: none\n{SVG}"  # the revised one stays
    assert outcome.returns[3].endswith("New label</text></svg>")


@pytest.mark.parametrize(("call", "named"), [
    (("revise_visual", {"visual_id": "nope", "edits": [{"old_text": "Old", "new_text": "x"}]}),
     "There is no visual 'nope' in this conversation"),
    (("revise_visual", {"visual_id": "call-0", "edits": [{"old_text": "Missing", "new_text": "x"}]}),
     "old_text does not occur in the page: read_visual it"),
    (("revise_visual", {"visual_id": "call-0", "edits": [{"old_text": "e", "new_text": "x"}]}),
     "old_text occurs"),
    (("revise_visual", {"visual_id": "call-0", "edits": []}), "edits is empty"),
    (("revise_visual", {"visual_id": "call-0", "edits": [
        {"old_text": "<text", "new_text": '<image href="https://img.example/a.png"/><text'}]}),
     "it loads https://img.example/a.png from another site"),
    (("revise_visual", {"visual_id": "call-0", "edits": [
        {"old_text": "<text", "new_text": '<image href="{{image:logo}}"/><text'}]}),
     "the revision uses ['logo'] images the visual does not have"),
])
def test_a_revision_that_cannot_apply_is_a_retry_and_adds_no_visual(setup, call, named):
    org, person, agent = setup
    outcome = go(run_for(org, person, agent, surface="api"), [draw(), call, ("read_visual", {"visual_id": "call-1"})])
    assert named in outcome.retries[0]
    assert outcome.returns[-1] == "There is no visual 'call-1' in this conversation."


def test_read_visual_of_an_unknown_id_is_a_result_not_a_retry(setup):
    org, person, agent = setup
    outcome = go(run_for(org, person, agent, surface="api"), [("read_visual", {"visual_id": "call-9"})])
    assert outcome.retries == [] and outcome.returns == ["There is no visual 'call-9' in this conversation."]


# ------------------------------------------------------------------ reopened from the transcript


def _drawn_in(org, person, agent, conversation) -> Run:
    run = run_for(org, person, agent, conversation=conversation)
    calls = [draw(), ("revise_visual", {"visual_id": "call-0",
                                        "edits": [{"old_text": "Old label", "new_text": "Second label"}]})]
    store_turn(run, go(run, calls), calls)
    return run


def test_a_later_turn_names_earlier_visuals_and_reads_them_from_the_transcript(setup):
    org, person, agent = setup
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=person, title="Explain")
    _drawn_in(org, person, agent, conversation)
    later = go(run_for(org, person, agent, conversation=conversation), [
        ("read_visual", {"visual_id": "call-0"}), ("read_visual", {"visual_id": "call-1"}),
        ("revise_visual", {"visual_id": "call-1", "edits": [{"old_text": "Second", "new_text": "Third"}]})])
    instructions = later.script.requests[0].instructions
    assert "- call-0: Pipeline\n- call-1: Pipeline (a revision)" in instructions
    assert later.returns[0] == f"call-0 — svg, 'Pipeline', images: none\n{SVG}"
    assert later.returns[1].endswith("Second label</text></svg>")
    assert later.returns[2]["content"].endswith("Third label</text></svg>")


def test_another_conversation_or_organization_never_finds_those_visuals(setup, outsider_org, outsider):
    org, person, agent = setup
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=person, title="Explain")
    _drawn_in(org, person, agent, conversation)
    elsewhere = Conversation.objects.create(organization=org, agent=agent, owner=person, title="Other")
    other = go(run_for(org, person, agent, conversation=elsewhere), [("read_visual", {"visual_id": "call-0"})])
    assert other.returns == ["There is no visual 'call-0' in this conversation."]
    assert "call-0" not in other.script.requests[0].instructions
    # An outsider's run that names this organization's conversation id still reads only its own organization.
    foreign_agent = factories.published_agent(outsider_org, outsider, name="Foreign",
                                              capabilities=[{"id": "visuals"}])
    foreign_run = run_for(outsider_org, outsider, foreign_agent)
    foreign_deps = deps(run_id=str(foreign_run.pk), organization_id=str(outsider_org.pk),
                        agent_id=str(foreign_agent.pk), user_id=outsider.pk, surface="web",
                        conversation_id=str(conversation.pk))
    script = Script([("read_visual", {"visual_id": "call-0"}), ("revise_visual", {
        "visual_id": "call-0", "edits": [{"old_text": "Old", "new_text": "x"}]})])
    result = agent_for(VISUALS, foreign_deps, script).run_sync("go", deps=foreign_deps)
    outcome = Outcome(messages=result.all_messages(), script=script, output=result.output)
    assert outcome.returns == ["There is no visual 'call-0' in this conversation."]
    assert "There is no visual 'call-0'" in outcome.retries[0]
    assert "call-0" not in script.requests[0].instructions


# ------------------------------------------------------------------ the watching console's report


def test_draw_answers_with_the_watching_persons_report(setup):
    org, person, agent = setup
    reports.put(org.pk, person.pk, reports.digest("svg", SVG), ["ReferenceError: data is not defined (line 3)"])
    outcome = go(run_for(org, person, agent), [draw()], watching=True)
    result = outcome.returns[0]
    assert result["checked"] is True and result["errors"] == ["ReferenceError: data is not defined (line 3)"]
    assert "the console reported problems: ReferenceError" in result["message"]
    assert "revise_visual(visual_id='call-0'" in result["message"]


def test_a_clean_report_says_the_drawing_was_checked(setup):
    org, person, agent = setup
    reports.put(org.pk, person.pk, reports.digest("svg", SVG), [])
    result = go(run_for(org, person, agent), [draw()], watching=True).returns[0]
    assert result["checked"] is True and result["errors"] == []
    assert result["message"].startswith("Drawn and checked")


def test_a_revision_waits_for_the_report_on_the_revised_drawing(setup):
    org, person, agent = setup
    revised = SVG.replace("Old label", "New label")
    reports.put(org.pk, person.pk, reports.digest("svg", SVG), [])
    reports.put(org.pk, person.pk, reports.digest("svg", revised), ["failed to load blob:x"])
    outcome = go(run_for(org, person, agent), [draw(), ("revise_visual", {
        "visual_id": "call-0", "edits": [{"old_text": "Old label", "new_text": "New label"}]})], watching=True)
    assert outcome.returns[0]["errors"] == [] and outcome.returns[1]["errors"] == ["failed to load blob:x"]


def test_a_report_that_comes_after_five_seconds_still_answers_the_drawing(setup, settings):
    """The spec's wait is up to 10 s. redis-py's default socket timeout (5 s) used to end it with a TimeoutError
    that failed the whole run as "The model provider did not answer in time"; a report filed 5.5 s in is used."""
    import threading
    import time

    settings.VISUAL_REPORT_WAIT_SECONDS = 10
    org, person, agent = setup

    def file_late() -> None:
        time.sleep(5.5)  # past the client's default socket timeout, well inside the 10 s wait
        reports.put(org.pk, person.pk, reports.digest("svg", SVG), ["TypeError: late but reported"])

    filer = threading.Thread(target=file_late)
    filer.start()
    try:
        result = go(run_for(org, person, agent), [draw()], watching=True).returns[0]
    finally:
        filer.join()
    assert result["checked"] is True and result["errors"] == ["TypeError: late but reported"]


def test_another_persons_report_never_answers_the_drawing(setup, settings):
    settings.VISUAL_REPORT_WAIT_SECONDS = 1
    org, person, agent = setup
    colleague = factories.member(org, "member")
    reports.put(org.pk, colleague.pk, reports.digest("svg", SVG), ["planted"])
    result = go(run_for(org, person, agent), [draw()], watching=True).returns[0]
    assert result["checked"] is False and "planted" not in result["message"]
    assert "the console sent no report on how it rendered within 1 s" in result["message"]
    assert reports.client().llen(reports.key(org.pk, colleague.pk, reports.digest("svg", SVG))) == 1


@pytest.mark.parametrize(("surface", "watching"), [("web", False), ("api", True), ("schedule", False)])
def test_draw_does_not_wait_where_nobody_watches_web_chat(setup, surface, watching):
    org, person, agent = setup
    reports.put(org.pk, person.pk, reports.digest("svg", SVG), ["would be consumed"])
    result = go(run_for(org, person, agent, surface=surface), [draw()], watching=watching).returns[0]
    assert result["checked"] is False and "nobody is watching" in result["message"]
    assert reports.client().llen(reports.key(org.pk, person.pk, reports.digest("svg", SVG))) == 1


# ------------------------------------------------------------------ images


@pytest.fixture
def workspace_run(setup):
    from workspaces import store

    org, person, agent = setup
    run = run_for(org, person, agent, surface="api")
    workspace = store.open_for_run(run, "run")
    store.write(str(workspace.pk), "/workspace/uploads/dot.png", PNG, run_id=str(run.pk))
    store.write(str(workspace.pk), "/workspace/notes.txt", b"not an image", run_id=str(run.pk))
    store.write(str(workspace.pk), "/workspace/uploads/big.png", b"\x89PNG" + b"0" * (2 * 1024 * 1024),
                run_id=str(run.pk))
    return run, str(workspace.pk)


def test_a_workspace_image_goes_in_as_a_data_uri_and_only_used_images_are_kept(workspace_run):
    run, workspace_id = workspace_run
    page = '<img alt="dot" src="{{image:dot}}">'
    images = [{"name": "dot", "source": "/workspace/uploads/dot.png"},
              {"name": "spare", "source": "/workspace/uploads/dot.png"}]
    drop = {"old_text": page, "new_text": "<p>gone</p>"}
    outcome = go(run, [draw(page, kind="html", images=images),
                       ("revise_visual", {"visual_id": "call-0", "edits": [drop]})], workspace_id=workspace_id)
    assert outcome.retries == []
    assert outcome.returns[0]["images"] == {"dot": "data:image/png;base64," + base64.b64encode(PNG).decode()}
    assert outcome.returns[1]["images"] == {}  # the revision no longer uses it


@pytest.mark.parametrize(("source", "named"), [
    ("https://images.example/cat.png", "does not fetch drawing images from the web"),
    ("/workspace/uploads/missing.png", "there is no file /workspace/uploads/missing.png"),
    ("/workspace/notes.txt", "/workspace/notes.txt is not an image file"),
    ("/workspace/uploads/big.png", "an image is at most 2,097,152"),
])
def test_an_image_that_cannot_be_used_is_a_refusal_not_a_retry(workspace_run, source, named):
    run, workspace_id = workspace_run
    outcome = go(run, [draw('<img src="{{image:pic}}">', kind="html", images=[{"name": "pic", "source": source}]),
                       ("read_visual", {"visual_id": "call-0"})], workspace_id=workspace_id)
    assert outcome.retries == []
    assert outcome.returns[0].startswith("Refused") and named in outcome.returns[0]
    assert outcome.returns[1] == "There is no visual 'call-0' in this conversation."


def test_an_image_without_a_workspace_is_a_refusal(setup):
    org, person, agent = setup
    outcome = go(run_for(org, person, agent, surface="api"),
                 [draw('<img src="{{image:pic}}">', kind="html", images=[{"name": "pic", "source": "/workspace/a.png"}])])
    assert outcome.retries == [] and "this agent has no workspace in this run" in outcome.returns[0]
