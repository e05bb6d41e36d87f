"""/api/schema/ documents every operation: drf-spectacular generates it without one error or warning. An error there
("exception raised while getting serializer … Ignoring the view") is an operation published with no request or
response body; a warning an operationId or enum name given a numeral or hash suffix, which changes under a client
generated from the schema. tests/api/test_fuzz.py then holds every answer to what is documented."""

from __future__ import annotations

import io
from contextlib import redirect_stderr

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def test_the_schema_is_generated_without_an_error_or_a_warning(tmp_path):
    said = io.StringIO()
    with redirect_stderr(said):
        try:
            call_command("spectacular", "--file", str(tmp_path / "schema.yaml"), "--validate", "--fail-on-warn")
        except (CommandError, SystemExit) as exc:
            problems = sorted({line for line in said.getvalue().splitlines() if "Error" in line or "Warning" in line})
            pytest.fail(f"{exc}\n" + "\n".join(problems))
    assert (tmp_path / "schema.yaml").stat().st_size > 100_000
