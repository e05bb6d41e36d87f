from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "notifications"

    def ready(self) -> None:
        from governance import signals
        from notifications import receivers

        # A run waiting for a decision tells who may decide it (issue 44 §7).
        signals.approval_requested.connect(receivers.approval_requested, dispatch_uid="notify-approval-requested")
