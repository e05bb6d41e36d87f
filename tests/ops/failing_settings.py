"""The project's settings with tests.ops.failing_app as the URLs: a real daphne started the way `make run` starts it
can then be asked for a page that raises (tests/ops/test_production_defaults.py). Nothing else differs."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "tests.ops.failing_app"
