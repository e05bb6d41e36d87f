"""Load what a run needs before the first one arrives.

A worker's first run imported every capability (and the MCP, web and document libraries behind them) on
its way: about three seconds of CPU that the first person to write after a deploy or restart waited for.
A worker pays it once at start instead (`config.celery`, signal `worker_ready`).
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)


def warm_up() -> float:
    """Import the capability registry with every built-in capability, the model providers and the runner.
    Returns the seconds it took."""
    started = time.monotonic()
    from agents.providers import demo  # noqa: F401 - the import is the point
    from agents.runner import execute  # noqa: F401
    from capabilities import registry

    registry.all_capabilities()
    took = time.monotonic() - started
    logger.info("runner warmed up in %.2f s", took)
    return took
