from django.apps import AppConfig


class GeneratedMediaConfig(AppConfig):
    name = "media"
    label = "generated_media"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from media import store

        # However a conversation goes, its generated files are queued for removal in the
        # deleting transaction (the rows go with it by foreign key).
        pre_delete.connect(store.on_conversation_delete, sender="agents.Conversation",
                           dispatch_uid="generated_media.conversation_files")
