from django.apps import AppConfig


class TriggersConfig(AppConfig):
    name = "triggers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents import extensions
        from triggers import proposed

        # The schedule an Architect's proposal carries is checked and created by this app (agents.extensions).
        extensions.register_proposed_trigger(extensions.ProposedTrigger(
            problems=proposed.problems, describe=proposed.describe, create=proposed.create))
