"""The runs loop is uvloop's when uvloop is installed, asyncio's own when RUN_LOOP_UVLOOP is off — and runs work
the same on either (the runner's own tests run on the default, uvloop)."""

from __future__ import annotations

import asyncio

import uvloop

from agents.runner.loop import RunLoop


def _kind(loop: RunLoop) -> type:
    try:
        return type(loop.loop)
    finally:
        loop.close()


def test_the_runs_loop_is_uvloops_by_default_and_asyncios_when_turned_off(settings):
    settings.RUN_LOOP_UVLOOP = True
    assert _kind(RunLoop(4)) is uvloop.Loop
    settings.RUN_LOOP_UVLOOP = False
    assert issubclass(_kind(RunLoop(4)), asyncio.BaseEventLoop)


def test_a_coroutine_admitted_to_a_uvloop_runs_loop_runs_there(settings):
    settings.RUN_LOOP_UVLOOP = True
    loop = RunLoop(2)
    try:
        async def where() -> str:
            await asyncio.sleep(0)
            return type(asyncio.get_running_loop()).__name__

        assert loop.admit(where).result(timeout=10) == "Loop"
    finally:
        loop.close()
