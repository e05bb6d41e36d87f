"""ask_user: ask_user_question parks the run where someone can answer, and answers at once where nobody can."""

from __future__ import annotations

from pydantic_ai import DeferredToolRequests, DeferredToolResults
from pydantic_ai_harness.ask_user import AskUserAnswer, AskUserRequest, AskUserResponse, ask_user_result

from capabilities.ask_user import NOBODY_TO_ASK
from tests.capabilities.helpers import Script, agent_for, deps, run, spec

ASK = spec({"id": "ask_user"})


def _question(header: str = "Format") -> dict:
    return {
        "header": header,
        "question": "Which format do you want?",
        "options": [{"label": "PDF", "description": "A printable file"}, {"label": "Slides"}],
    }


async def test_where_nobody_can_answer_the_model_hears_that_the_person_did_not_answer():
    outcome = await run(ASK, [("ask_user_question", {"questions": [_question()]})], deps(can_ask_user=False))
    assert outcome.returns == [NOBODY_TO_ASK]
    assert outcome.output == "done"


async def test_where_someone_can_answer_the_run_parks_and_resumes_with_the_answer():
    run_deps = deps(can_ask_user=True, surface="web")
    script = Script([("ask_user_question", {"questions": [_question()]})])
    agent = agent_for(ASK, run_deps, script, output_type=[str, DeferredToolRequests])
    parked = await agent.run("go", deps=run_deps)
    assert isinstance(parked.output, DeferredToolRequests)
    [call] = parked.output.calls
    assert call.tool_name == "ask_user_question"

    request = AskUserRequest.from_tool_call(call)
    answer = ask_user_result(
        request, AskUserResponse(answers=(AskUserAnswer(header="Format", selected=("Slides",)),))
    )
    resumed = await agent.run(
        message_history=parked.all_messages(),
        deferred_tool_results=DeferredToolResults(calls={call.tool_call_id: answer}),
        deps=run_deps,
    )
    assert resumed.output == "done"
    returns = [
        p for m in resumed.all_messages() for p in getattr(m, "parts", []) if p.part_kind == "tool-return"
    ]
    assert returns[-1].content == {"Format": ["Slides"]}


async def test_more_than_ten_questions_is_a_retry_that_never_reaches_the_person():
    questions = [_question(f"Q{i}") for i in range(11)]
    outcome = await run(ASK, [("ask_user_question", {"questions": questions})], deps(can_ask_user=False))
    assert outcome.retries and "10" in outcome.retries[0]


async def test_both_paths_offer_the_same_tool_schema():
    nobody = await run(ASK, [], deps(can_ask_user=False))
    someone = await run(ASK, [], deps(can_ask_user=True), output_type=[str, DeferredToolRequests])
    [a] = nobody.script.requests[0].function_tools
    [b] = someone.script.requests[0].function_tools
    assert a.name == b.name == "ask_user_question"
    assert a.parameters_json_schema == b.parameters_json_schema
    assert a.description == b.description


async def test_a_renamed_ask_user_tool_still_parks_the_run():
    the_spec = spec({"id": "ask_user", "tool_overrides": {"ask_user_question": {"name": "ask_the_customer"}}})
    run_deps = deps(can_ask_user=True, surface="web")
    script = Script([("ask_the_customer", {"questions": [_question()]})])
    agent = agent_for(the_spec, run_deps, script, output_type=[str, DeferredToolRequests])
    parked = await agent.run("go", deps=run_deps)
    assert isinstance(parked.output, DeferredToolRequests)
    assert [c.tool_name for c in parked.output.calls] == ["ask_the_customer"]
