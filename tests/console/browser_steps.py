"""Steps the console's browser tests share: the one password their people are made with, and signing in."""

from __future__ import annotations

PASSWORD = "pw-correct-horse-9"


def sign_in(page, base_url: str, email: str) -> None:
    page.goto(f"{base_url}/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/")
