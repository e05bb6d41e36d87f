"""Ask the user: `ask_user_question` (1-10 multiple-choice questions) from pydantic-ai-harness `AskUser`.

Where someone can answer (web chat: `deps.can_ask_user`), the call is deferred — the harness raises
`CallDeferred` and the run ends with `DeferredToolRequests`; the runner parks it (awaiting_answer) and
resumes with `ask_user_result(...)` in `DeferredToolResults.calls`. Where nobody can answer (API, schedule,
embed), the answerer declines at once and the model is told the person did not answer, and goes on.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai_harness.ask_user import TOOL_NAME
from pydantic_ai_harness.ask_user import AskUser as HarnessAskUser
from pydantic_ai_harness.ask_user._types import Questions  # the harness's schema, so both paths match

from capabilities.base import BuildContext, Built, Capability, NoConfig, ToolDecl, tool_text

NOBODY_TO_ASK = (
    "Nobody can answer questions on this channel, so the person did not answer. Make a reasonable "
    "choice, say which one you made, and continue."
)


async def ask_user_question(ctx: RunContext[Any], questions: Questions) -> str:
    """Where nobody can answer: same name and schema as the harness tool, answered at once.

    Args:
        ctx: Framework-provided run context.
        questions: One to ten questions, each with a unique `header`, two to six options,
            and `multi_select` when several answers are allowed.
    """
    return NOBODY_TO_ASK


ASK_USER_TOOL = ToolDecl(
    id=TOOL_NAME,
    description=tool_text(
        what="Ask the person one to ten multiple-choice questions and wait for the answers.",
        when="When a decision only the person can make blocks the task and the answer is not in the "
        "conversation or your tools. Offer concrete options instead of guessing or burying a question "
        "in prose; batch related questions into one call. Never ask for passwords, keys or codes.",
        args="questions: 1-10 items, each with header (unique, at most 25 characters; answers are keyed by "
        "it), question (at most 500 characters), options (2-6, each a label of at most 50 characters and "
        "an optional description of what choosing it means) and multi_select (default false).",
        returns="An object mapping each header to the list of picked labels (or a one-item list with the "
        "person's own words), or a sentence saying the person did not answer — then make a reasonable "
        "choice and say which. A call outside the limits comes back as a request to fix it.",
    ),
)


def build(ctx: BuildContext) -> list[Built]:
    if ctx.deps.can_ask_user:
        return [HarnessAskUser(answerer=None)]
    # The harness's own "declined" text invites asking again, which nobody here could answer.
    return [FunctionToolset([Tool(ask_user_question, name=TOOL_NAME)], max_retries=1)]


CAPABILITY = Capability(
    id="ask_user",
    name="Ask the user",
    category="utility",
    description="Asks the person multiple-choice questions when only they can decide, instead of guessing.",
    offers="multiple-choice questions to the person when a decision is theirs",
    examples=(
        "Draft the announcement, and ask me whatever you need to decide first.",
        "Help me choose a plan for our team.",
        "Set up the weekly report the way I want it.",
    ),
    never_does=(
        "It never waits where nobody can answer (the API, a schedule, an embed): the agent is told the "
        "person did not answer and goes on. Only the person who was asked can answer."
    ),
    tools=(ASK_USER_TOOL,),
    config_model=NoConfig,
    voice="live",
    recommended=True,
    build=build,
)
