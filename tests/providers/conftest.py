"""The fake OpenAI-compatible server fixture (`fake_openai`) for provider tests."""

from tests.fakes.openai_server import fake_openai  # noqa: F401
