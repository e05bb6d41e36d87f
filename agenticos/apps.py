from django.apps import AppConfig


class AgenticosConfig(AppConfig):
    name = "agenticos"
    default_auto_field = "django.db.models.BigAutoField"
