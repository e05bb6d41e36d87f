from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    name = "capabilities.artifacts"
    label = "artifacts"
    default_auto_field = "django.db.models.BigAutoField"
