"""The collector of a process that serves runs (agenticos/gc_tuning.py): what it imported is frozen, the young
generation's threshold is GC_THRESHOLDS', cyclic garbage is still collected, and a bad setting is refused.
(Tests run with GC_THRESHOLDS empty — config/settings.py — so each test here sets it.)"""

from __future__ import annotations

import gc
import weakref

import pytest
from celery.signals import worker_ready

from agenticos import gc_tuning


@pytest.fixture
def collector():
    """Give the test process its collector back as it was (tune() changes the whole process)."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Cycle:
    def __init__(self):
        self.me = self


def test_tune_freezes_what_is_loaded_and_sets_the_thresholds(settings, collector):
    settings.GC_THRESHOLDS = "40000,15,12"
    assert gc_tuning.tune() == (40000, 15, 12)
    assert gc.get_threshold() == (40000, 15, 12)
    assert gc.get_freeze_count() > 10_000  # Django and the libraries, out of the collector's sight
    # Garbage made afterwards is still garbage: a cycle is freed by a collection.
    cycle = Cycle()
    gone = weakref.ref(cycle)
    del cycle
    assert gone() is not None  # a cycle: its reference count alone does not free it
    gc.collect()
    assert gone() is None


def test_empty_keeps_cpython_defaults(settings, collector):
    settings.GC_THRESHOLDS = ""
    before = gc.get_threshold()
    assert gc_tuning.tune() is None
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("value", ["50000,20", "a,b,c", "0,10,10", "50000,20,10,5"])
def test_a_bad_setting_is_refused_with_what_is_expected(settings, collector, value):
    settings.GC_THRESHOLDS = value
    with pytest.raises(ValueError, match="three positive integers"):
        gc_tuning.tune()
    assert gc.get_freeze_count() == 0


def test_a_ready_worker_tunes_its_collector(settings, collector):
    settings.GC_THRESHOLDS = "30000,10,10"
    worker_ready.send(sender=None)
    assert gc.get_threshold() == (30000, 10, 10)
    assert gc.get_freeze_count() > 0
