from typing import Any

from django.apps import AppConfig


def check_publish_gate(*, actor: Any, agent: Any, version: Any = None) -> None:
    """The publish gate, imported when a publish asks for it: evals.gate loads pydantic-evals, which loads the
    OpenTelemetry SDK — no process that never publishes should (tests/ops/test_telemetry.py). `version`: a published
    version about to be rolled out (agents.rollouts), else the draft."""
    from evals.gate import check_publish

    check_publish(actor=actor, agent=agent, version=version)


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evaluations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents import extensions
        from evals import answers

        # agents never imports evals: the gate and the cases' answers plug in here.
        extensions.register_publish_gate("evaluation_suites", check_publish_gate)
        extensions.register_deferred_answerer("eval", extensions.DeferredAnswerer(
            answer=answers.answer_for_case, max_rounds=answers.MAX_ROUNDS))
