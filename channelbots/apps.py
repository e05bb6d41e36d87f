from django.apps import AppConfig


class ChannelbotsConfig(AppConfig):
    name = "channelbots"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A decision anywhere updates the thread's card; a resumed channel run answers in its thread.
        from channelbots import approvals
        from governance import signals

        signals.approval_decided.connect(approvals.on_approval_decided, dispatch_uid="channelbots.card")
        signals.run_resumed.connect(approvals.on_run_resumed, dispatch_uid="channelbots.resumed")

        from channelbots.retention import sweep_link_requests
        from governance import retention

        retention.register_sweep("expired_link_requests", sweep_link_requests)

        from capabilities.follow_ups.service import register_chat_app_poster
        from channelbots import follow_ups

        for surface in ("slack", "telegram", "mattermost"):
            register_chat_app_poster(surface, follow_ups.post)

        from capabilities.channel_tools import access
        from channelbots.channel_access import channel_of_run
        from channelbots.platforms import MAX_CHAT_FILE_BYTES, PlatformError

        access.register(access.ChannelAccess(channel_of_run=channel_of_run, error=PlatformError,
                                             max_file_bytes=MAX_CHAT_FILE_BYTES))
