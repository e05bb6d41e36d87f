from typing import Any

from django.apps import AppConfig


def check_publish_gate(*, actor: Any, agent: Any, version: Any = None) -> None:
    """The publish gate, imported when a publish asks for it: evals.gate loads pydantic-evals, which loads the
    OpenTelemetry SDK — no process that never publishes should (tests/ops/test_telemetry.py). `version`: a published
    version about to be rolled out (agents.rollouts), else the draft."""
    from evals.gate import check_publish

    check_publish(actor=actor, agent=agent, version=version)


def check_replay_gate(*, actor: Any, agent: Any, version: Any = None) -> None:
    """The replay gate (evals/replay_gate.py), imported when a publish asks for it, like the suites' gate."""
    from evals.replay_gate import check_publish

    check_publish(actor=actor, agent=agent, version=version)


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evaluations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from agents import extensions
        from evals import answers, replay_tools, replays
        from governance import retention

        # agents never imports evals: the gate and the cases' answers plug in here.
        extensions.register_publish_gate("evaluation_suites", check_publish_gate)
        extensions.register_publish_gate("replay_set", check_replay_gate)
        extensions.register_deferred_answerer("eval", extensions.DeferredAnswerer(
            answer=answers.answer_for_case, max_rounds=answers.MAX_ROUNDS))
        # A replay's run answers its tool calls from the recorded run (evals/replay_tools.py), and its copies go
        # with the recorded run's retention.
        extensions.register_run_capabilities("replay_tools", replay_tools.run_capabilities)
        retention.register_sweep("replay_results", replays.sweep_expired)
        post_delete.connect(replays.forget_replay_conversation, sender="evals.ReplayResult",
                            dispatch_uid="evals.replays.forget_replay_conversation")
