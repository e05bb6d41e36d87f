from django.apps import AppConfig


class CapabilitiesConfig(AppConfig):
    name = "capabilities"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from capabilities.compaction import persisted
        from capabilities.media import store as media_store
        from governance import retention

        retention.register_sweep("compacted_histories", persisted.sweep_past_period)

        # A deleted conversation's offloaded history (media+sha256:// blobs) goes with it.
        pre_delete.connect(
            media_store.on_conversation_delete, sender="agents.Conversation", dispatch_uid="media.conversation_files"
        )
