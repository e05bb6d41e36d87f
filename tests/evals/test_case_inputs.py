"""A case's prior conversation and attachments reach the model as a person's would; list endpoints do not
grow a query per row."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Conversation, Message, Run
from evals import services
from tests.evals.conftest import make_agent, run_suite, suite_with
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of

# Transactional only where a test asks for the worker (celery_worker brings transactional_db): the rest run in a
# rolled-back transaction, and a suite run they start is never handed to a worker (its on_commit never fires).
pytestmark = pytest.mark.django_db


def test_prior_turns_and_attachments_reach_the_model(org, owner, scripted_openai, celery_worker):
    agent, _v, _p = make_agent(org, owner, scripted_openai)
    scripted_openai.script("recall", Reply.text("Ada, the code word is PLUM."))
    suite = suite_with(org, owner, agent, [{
        "name": "recall", "prompt": "[case:recall] What is my name and the code word?",
        "history": [{"role": "user", "content": "My name is Ada."}, {"role": "assistant", "content": "Hi Ada!"}],
        "attachments": [{"name": "notes.txt", "mime": "text/plain", "content": "The code word is PLUM."}],
        "checks": [{"kind": "contains", "value": "PLUM"}]}])

    suite_run = run_suite(org, owner, suite)

    assert suite_run.results.get().status == "passed"
    messages = scripted_openai.requests_for("recall")[0]["messages"]
    said = [(m["role"], str(m["content"])) for m in messages if m["role"] in ("user", "assistant")]
    assert said[0] == ("user", "My name is Ada.") and said[1] == ("assistant", "Hi Ada!")
    assert "notes.txt" in said[2][1] and "The code word is PLUM." in said[2][1]
    # The case's conversation belongs to nobody: it is in no one's chat list or conversation search.
    run = Run.objects.get(pk=suite_run.results.get().run_id)
    assert Conversation.objects.get(pk=run.conversation_id).owner_id is None
    assert Message.objects.filter(conversation_id=run.conversation_id).count() == 4


def test_the_suite_and_run_lists_read_a_fixed_number_of_queries(org, owner, scripted_openai, api_as):
    agent, _v, _p = make_agent(org, owner, scripted_openai)
    client = api_as(owner, org)

    def count(path: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        return len(queries)

    suite = suite_with(org, owner, agent, [{"name": "c", "prompt": "hi"}], name="One")
    services.start_suite_run(actor=actor_of(owner, org), suite=suite, target="1")
    one = (count(f"/api/v1/agents/{agent.pk}/evals"), count(f"/api/v1/agents/{agent.pk}/evals/runs"))
    for name in ("Two", "Three"):
        more = suite_with(org, owner, agent, [{"name": "c", "prompt": "hi"}, {"name": "d", "prompt": "yo"}], name=name)
        services.start_suite_run(actor=actor_of(owner, org), suite=more, target="1")
    three = (count(f"/api/v1/agents/{agent.pk}/evals"), count(f"/api/v1/agents/{agent.pk}/evals/runs"))
    assert three == one
