"""Python's cyclic garbage collector, set for a process that holds hundreds of runs at once.

With CPython's default thresholds (700, 10, 10) a young collection runs every 700 net container allocations,
and every object alive at that moment is examined and promoted; whatever outlives ten of those is examined
again in the middle generation and then joins the old one, whose full collections examine the whole heap. A
streamed run allocates thousands of short-lived objects per model response (chunks, events, frames), and with
300 runs interleaved on one loop each of them is alive for far more allocations than with 50: more of them
are examined, promoted and examined again. Measured in one process (`bench/run_cost.py`, the loop thread's
CPU and `gc.callbacks`' time): the collector's share grew from a few ms per run at N=50 to ~25 ms per run at
N=300 — the part of a run's CPU that grew with the number of runs in flight.

So a process that serves runs (the Celery workers, daphne) calls `tune()` once it has imported what it
serves: (1) `gc.freeze()` moves everything alive then — Django, the libraries, the capability registry, a few
hundred thousand objects that live as long as the process — out of the collector's sight, so a full collection
examines only what runs hold (shorter pauses of the loop every run waits on); (2) the young generation's
threshold goes from 700 to GC_THRESHOLDS' first number (50,000 by default): most of a run's short-lived objects
are freed by their reference counts before any collection sees them, so they are neither examined nor
promoted. Cyclic garbage is still collected, later: at most that many container objects (a few MB) wait for it.
GC_THRESHOLDS="" keeps CPython's defaults (and no freeze).
"""

from __future__ import annotations

import gc
import logging

from django.conf import settings

logger = logging.getLogger(__name__)


def thresholds() -> tuple[int, int, int] | None:
    """GC_THRESHOLDS as three positive integers, or None when it is empty (CPython's defaults are kept)."""
    configured = str(settings.GC_THRESHOLDS).strip()
    if not configured:
        return None
    try:
        values = tuple(int(part) for part in configured.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise ValueError(f"GC_THRESHOLDS must be three positive integers (e.g. 50000,20,10), not {configured!r}")
    return values  # type: ignore[return-value]


def tune() -> tuple[int, int, int] | None:
    """Freeze what this process has imported and set the collector's thresholds (see the module's docstring).
    Call once the process has loaded what it serves; calling it again freezes what was added since. Returns the
    thresholds set, None when GC_THRESHOLDS keeps the defaults."""
    chosen = thresholds()
    if chosen is None:
        return None
    # A collection first: garbage alive now would be frozen with the rest and never freed.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*chosen)
    logger.info("garbage collector: %d objects frozen, thresholds %s", gc.get_freeze_count(), chosen)
    return chosen
