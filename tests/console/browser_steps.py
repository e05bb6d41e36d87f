"""Steps the console's browser tests share: the one password their people are made with, and signing in."""

from __future__ import annotations

import re

PASSWORD = "pw-correct-horse-9"
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def sign_in(page, base_url: str, email: str, *, then: str = "/") -> None:
    """Signed in through the sign-in form's own GET and POST (its CSRF cookie and token, the password checked by
    the real view, the session cookie set in the page's context, as the browser would keep it), without drawing
    the form: the browser tests are about what comes after, and drawing the form and then the home page was
    ~0.6 s of each. The form itself, as a person fills it, is tested where it is the subject
    (tests/console/test_browser_chat.py's main flow, the passkey and evaluation-progress tests). The page then opens `then`:
    the home page, where the form's redirect takes a person, unless the test goes somewhere else first."""
    request = page.context.request
    form = request.get(f"{base_url}/login/")
    token = _CSRF_INPUT.search(form.text())
    assert form.ok and token, (form.status, form.text()[:500])
    answer = request.post(f"{base_url}/login/", max_redirects=0,
                          form={"csrfmiddlewaretoken": token.group(1), "username": email, "password": PASSWORD})
    assert answer.status == 302 and answer.headers.get("location") == "/", (answer.status, answer.text()[:500])
    page.goto(f"{base_url}{then}")
