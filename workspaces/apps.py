from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agenticos.services import register_reserved_secrets
        from workspaces.models import SandboxConnection

        # The deployment's own sandbox service token, sealed per organization: not a secret people pick or delete.
        register_reserved_secrets(lambda organization_id: SandboxConnection.objects.filter(  # type: ignore[misc]
            organization_id=organization_id, is_deployment=True, secret__isnull=False).values_list("secret_id", flat=True))
