from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agenticos.signals import member_removed
        from knowledge.grants import on_member_removed

        member_removed.connect(on_member_removed, dispatch_uid="knowledge.grants.member_removed")
