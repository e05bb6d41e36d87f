from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evaluations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents import extensions
        from evals import answers, gate

        # agents never imports evals: the gate and the cases' answers plug in here.
        extensions.register_publish_gate("evaluation_suites", gate.check_publish)
        extensions.register_deferred_answerer("eval", extensions.DeferredAnswerer(
            answer=answers.answer_for_case, max_rounds=answers.MAX_ROUNDS))
