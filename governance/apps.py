from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "governance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from governance import retention

        # However a conversation goes (agents.chat.delete_conversation, a cascade, a queryset), its stored
        # files are queued in the deleting transaction.
        pre_delete.connect(retention.on_conversation_delete, sender="agents.Conversation",
                           dispatch_uid="governance.retention.conversation_files")

        from agenticos.signals import member_removed
        from governance.grants import on_member_removed

        member_removed.connect(on_member_removed, dispatch_uid="governance.grants.member_removed")
