"""Password sign-in, refused for members of an organization that requires SSO (its break-glass owner excepted).

The check sits in the authentication backend, not in the sign-in form, so every password path (the console's
sign-in, the operator admin's, password reset's automatic sign-in) obeys it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

from identity import services


class PasswordBackend(ModelBackend):
    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and services.password_refused_by(user) is not None:
            if request is not None:
                setattr(request, "sso_required", True)  # noqa: B010  (the sign-in page says why)
            return None
        return user
