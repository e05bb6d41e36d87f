"""The one runner. `execute(run_id)` is the only way a run executes (`start` hands it to the runs loop)."""

from agents.runner.execute import execute, execute_collecting, start

__all__ = ["execute", "execute_collecting", "start"]
