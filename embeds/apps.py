from django.apps import AppConfig


class EmbedsConfig(AppConfig):
    name = "embeds"
    default_auto_field = "django.db.models.BigAutoField"
