from django.apps import AppConfig


class RemoteAgentsConfig(AppConfig):
    name = "capabilities.remote_agents"
    label = "remote_agents"
    default_auto_field = "django.db.models.BigAutoField"
