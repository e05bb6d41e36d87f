from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Sign-in"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agenticos.permissions import register_custom_roles
        from agenticos.tenancy import register_session_gate
        from identity import receivers  # noqa: F401  (connects the sign-in audit receivers)
        from identity.roles import DatabaseRoles
        from identity.sessions import session_gate

        register_custom_roles(DatabaseRoles())
        register_session_gate(session_gate)
