"""The one runner. `execute(run_id)` is the only way a run executes."""

from agents.runner.execute import execute, execute_collecting

__all__ = ["execute", "execute_collecting"]
