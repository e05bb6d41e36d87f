from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Sign-in"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from identity import receivers  # noqa: F401  (connects the sign-in audit receivers)
