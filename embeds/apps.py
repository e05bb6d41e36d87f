from django.apps import AppConfig


class EmbedsConfig(AppConfig):
    name = "embeds"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from embeds.retention import page_files
        from governance import retention

        retention.register_message_files(page_files)
