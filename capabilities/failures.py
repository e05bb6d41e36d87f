"""The one place that decides how a tool reports a problem: retry, result or refusal.

How a tool reports a problem decides what the model does next, and the four kinds are not
interchangeable (spec: "Un error, un resultado y un rechazo"):

| the failure                                              | the tool                          |
|----------------------------------------------------------|-----------------------------------|
| the model's own arguments (a short chart series, a       | `retry(ctx, msg)`: retry request  |
| NameError in the Python it wrote)                        |                                   |
| a transient fault behind the tool (a provider down,      | `transient(ctx, msg)`: retry      |
| a timeout)                                               | request                           |
| a result that is simply bad news (exit code != 0,        | `bad_news(msg)`: returned as text |
| no hits)                                                 |                                   |
| a refusal (a permission rule, a capability the           | `refuse(msg)`: returned as text,  |
| deployment does not offer)                               | never a retry                     |

Retries are budgeted: a tool call has `ctx.max_retries` attempts to correct itself, and a retry raised
past that budget ends the whole run instead of the call. So on the last attempt `retry`/`transient`
return their message as plain text instead of raising: steered while there is budget for it, and never
worse than the answer the model would have given anyway.

Usage inside a tool: ``return failures.retry(ctx, "x_values is empty: ...")`` — it raises while a retry
remains and returns the text on the last attempt, so the `return` matters.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelRetry, RunContext

LAST_ATTEMPT_PREFIX = "This call failed and will not be retried"
REFUSAL_PREFIX = "Refused"


def retries_left(ctx: RunContext[Any]) -> bool:
    """Whether raising `ModelRetry` now still leaves the run alive."""
    return ctx.retry < ctx.max_retries


def retry(ctx: RunContext[Any], message: str) -> str:
    """The model's own arguments were wrong: ask it to call again, saying what a correct call looks like.

    Raises `ModelRetry(message)` while a retry remains; on the last attempt returns the message as a
    plain result instead, so an over-budget retry never ends the run.
    """
    if retries_left(ctx):
        raise ModelRetry(message)
    return f"{LAST_ATTEMPT_PREFIX}: {message}"


def transient(ctx: RunContext[Any], message: str) -> str:
    """Something behind the tool failed for now (provider down, timeout): retry while budget remains.

    Never disguised as an empty result: "nothing found" would make the model answer from memory.
    """
    if retries_left(ctx):
        raise ModelRetry(f"{message} This looks temporary; calling again may work.")
    return (
        f"{LAST_ATTEMPT_PREFIX}: {message} The service behind this tool is not answering right now; say so."
    )


def bad_news(message: str) -> str:
    """A result that is simply bad news (non-zero exit, no hits): it is the answer. Returned as text."""
    return message


def refuse(message: str) -> str:
    """A refusal (permissions, a thing this deployment does not offer): text, never a retry.

    A retry would invite the model to look for a way around the rule.
    """
    return f"{REFUSAL_PREFIX}: {message} Do not try to work around this; tell the person instead."
