"""The fake OpenAI-compatible server fixture (`fake_openai`) for provider tests."""

import pytest

from tests.fakes.openai_server import fake_openai  # noqa: F401


@pytest.fixture(autouse=True)
def _loopback_model_servers_are_allowed(settings):
    """The provider tests' fake servers listen on 127.0.0.1; an operator running a local model server lists
    it the same way. The guard's own tests set the list they need."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
