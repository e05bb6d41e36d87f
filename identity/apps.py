from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Sign-in"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agenticos.permissions import register_custom_roles
        from identity import receivers  # noqa: F401  (connects the sign-in audit receivers)
        from identity.roles import DatabaseRoles

        register_custom_roles(DatabaseRoles())
