"""A rollout on a bot binding's environment: each chat thread keeps the version its first turn had."""

from __future__ import annotations

import pytest

from agents import rollouts
from agents import services as agent_services
from agents.models import Run, RunStatus
from tests import factories
from tests.channelbots.conftest import actor, bind, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.channelbots.test_telegram import post_update, secret_of, telegram_bot
from tests.fakes.telegram_api import FakeTelegram, fake_telegram, telegram_message  # noqa: F401

pytestmark = pytest.mark.django_db


def test_each_chat_keeps_the_version_of_its_first_turn(celery_worker, scripted_model, client, org, builder,
                                                       fake_telegram):
    agent = factories.published_agent(org, builder, name="Support Agent")
    acting = actor(builder, org)
    agent_services.update_agent(actor=acting, agent=agent, spec={**agent.draft_spec, "instructions": "Candidate."})
    agent_services.publish_agent(actor=acting, agent=agent)
    rollout = rollouts.start_rollout(actor=acting, agent=agent, environment="production", candidate=2, share=99)
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Fine."))
    update_id = 0
    seen = []
    for chat_id in (41, 42, 43):
        for _turn in range(2):
            update_id += 1
            before = Run.objects.filter(status=RunStatus.COMPLETED).count()
            message = telegram_message(f"@acme_bot turn {update_id}", chat_id=-chat_id, chat_type="group",
                                       entities=[{"type": "mention", "offset": 0, "length": 9}])
            assert post_update(client, bot, {"update_id": update_id, "message": message},
                               secret_of(bot)).status_code == 200
            wait_until(lambda before=before: Run.objects.filter(status=RunStatus.COMPLETED).count() > before)
        runs = list(Run.objects.filter(options__channel__chat_id=str(-chat_id)).select_related("version"))
        assert len(runs) == 2 and len({run.conversation_id for run in runs}) == 1
        assert len({run.version.number for run in runs}) == 1
        assert all(run.options["rollout"] == str(rollout.pk) for run in runs)
        seen.append(runs[0].version.number)
    assert 2 in seen  # three chats all on the base at 99 %: once in a million
