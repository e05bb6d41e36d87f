"""The checkpoint a run writes with each tool-calling step (agents/runner/checkpoint.py): whole the first time,
then only what is new, in the statement that records the step's spend; what it holds is the run's history."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run
from agents.runner.execute import RunExecution, execute
from agents.runner.frames import CollectingSink
from tests.runner.conftest import publish
from tests.runner.test_execute import CHART_ARGS, start
from tests.runner.test_hot_path import statements

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 3


def charts_in_steps() -> FunctionModel:
    """Draws a chart per step, STEPS times, then answers."""
    async def stream(messages, info: AgentInfo):
        drawn = sum(1 for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart))
        if drawn == STEPS:
            yield "All drawn."
            return
        yield f"Chart {drawn + 1}."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id=f"c{drawn}")}

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_each_tool_step_appends_to_the_checkpoint_in_the_statement_of_its_spend(org, owner, scripted_model,
                                                                                  monkeypatch):
    scripted_model(charts_in_steps())
    agent, version = publish(org, owner, capabilities=[{"id": "charts"}])
    run = start(org, owner, agent, version, prompt="Three charts")
    kept: dict = {}
    finish = RunExecution._finish

    def finishing(self, *args, **kwargs):  # the ending clears the checkpoint: look at it just before
        kept["checkpoint"] = Run.objects.get(pk=self.run.pk).checkpoint
        kept["written"] = self.checkpoints_written
        return finish(self, *args, **kwargs)

    monkeypatch.setattr(RunExecution, "_finish", finishing)
    sink = CollectingSink()
    with statements() as executed:
        execute(run.pk, sink)
    run.refresh_from_db()
    assert run.status == "completed" and run.checkpoint is None

    ending = executed[-1]
    assert "finished_at" in ending and "checkpoint" in ending  # cleared in the ending's statement
    steps = [sql for sql in executed[:-1] if "governance_spendentry" in sql and "checkpoint" in sql]
    assert len(steps) == STEPS == kept["written"]  # no statement of its own
    assert "jsonb_set" not in steps[0] and all("jsonb_set" in sql for sql in steps[1:])  # whole, then appended

    checkpoint = kept["checkpoint"]
    assert checkpoint["steps"] == STEPS
    assert checkpoint["calls"] == [{"id": f"c{STEPS - 1}", "name": "create_chart", "read_only": True}]
    assert [p["type"] for p in checkpoint["parts"]] == ["text", "tool", "text", "tool", "text"]
    # The history through the last tool-calling response, as the model saw it: its request and response later
    # come after it (the final request with the last result, then the answer).
    stored = ModelMessagesTypeAdapter.validate_python(checkpoint["messages"])
    assert len(stored) == 2 * STEPS
    assert [type(m).__name__ for m in stored] == ["ModelRequest", "ModelResponse"] * STEPS
    calls = [p.tool_call_id for m in stored for p in getattr(m, "parts", []) if p.part_kind == "tool-call"]
    returns = [p.tool_call_id for m in stored for p in getattr(m, "parts", []) if p.part_kind == "tool-return"]
    assert calls == [f"c{n}" for n in range(STEPS)] and returns == [f"c{n}" for n in range(STEPS - 1)]
