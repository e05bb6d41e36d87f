from django.apps import AppConfig


class ChannelbotsConfig(AppConfig):
    name = "channelbots"
    default_auto_field = "django.db.models.BigAutoField"
