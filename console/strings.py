"""Words the chat client shows, translated on the server and handed to the JS as JSON.

The narration rail names what a call did, in the present while it runs and in the past once done
("Drawing a chart" → "Drew a chart"), never the function name when a phrase exists.
"""

from __future__ import annotations

from django.utils.translation import gettext as _


def tool_phrases() -> dict[str, dict[str, str]]:
    return {
        "get_current_time": {"running": _("Checking the time"), "done": _("Checked the time")},
        "create_chart": {"running": _("Drawing a chart"), "done": _("Drew a chart")},
        "run_python": {"running": _("Running a calculation"), "done": _("Ran a calculation")},
        "write_plan": {"running": _("Writing the plan"), "done": _("Wrote the plan")},
        "read_plan": {"running": _("Reading the plan"), "done": _("Read the plan")},
        "add_task": {"running": _("Adding a step to the plan"), "done": _("Added a step to the plan")},
        "update_task_status": {"running": _("Updating the plan"), "done": _("Updated the plan")},
        "update_task_statuses": {"running": _("Updating the plan"), "done": _("Updated the plan")},
        "remove_task": {"running": _("Removing a step"), "done": _("Removed a step")},
        "ask_user_question": {"running": _("Asking you"), "done": _("Asked you")},
        "ask_user": {"running": _("Asking you"), "done": _("Asked you")},
        "search_documents": {"running": _("Searching the documents"), "done": _("Searched the documents")},
        "web_search": {"running": _("Searching the web"), "done": _("Searched the web")},
        "web_fetch": {"running": _("Reading a web page"), "done": _("Read a web page")},
        "task": {"running": _("Handing work to a specialist"), "done": _("Handed work to a specialist")},
    }


def chat_strings() -> dict[str, str]:
    return {
        "files_title": _("Files"),
        "follow_ups": _("Suggested next steps"),
        "setup_trigger": _("Routine"),
        "setup_agent": _("Agent"),
        "setup_connection": _("Connection"),
        "setup_open_trigger": _("Open routines"),
        "setup_open_agent": _("Create the agent"),
        "setup_connect": _("Connect %(name)s"),
        "setup_open_connection": _("Open MCP servers"),
        "files_fill": _("%(used)s of %(max)s used (%(percent)s%%)"),
        "files_open": _("Open"),
        "files_download": _("Download"),
        "files_empty": _("No files yet."),
        "workspace_fill": _("Workspace %(percent)s%% full"),
        "running_tool": _("Running %(name)s"),
        "ran_tool": _("Ran %(name)s"),
        "failed_tool": _("%(phrase)s — failed"),
        "waiting_approval": _("%(phrase)s — waiting for approval"),
        "waiting_answer": _("Waiting for your answer"),
        "earlier_step": _("1 earlier step"),
        "earlier_steps": _("%(n)s earlier steps"),
        "hide_steps": _("Hide earlier steps"),
        "raw": _("Raw arguments and result"),
        "arguments": _("Arguments"),
        "result": _("Result"),
        "no_result": _("No result yet."),
        "you": _("You"),
        "thinking": _("Reasoning"),
        "approve": _("Approve"),
        "reject": _("Reject"),
        "approval_title": _("The agent wants to run %(name)s"),
        "approval_cannot": _("An admin of the organization must approve this call."),
        "approved": _("Approved — the turn continues."),
        "rejected": _("Rejected — the agent is told."),
        "question_of": _("Question %(i)s of %(n)s"),
        "own_answer": _("Or write your own answer"),
        "next": _("Next"),
        "back": _("Back"),
        "review": _("Review your answers"),
        "send_answers": _("Send answers"),
        "tokens": _("%(input)s input tokens · %(output)s output tokens"),
        "cost": _("Cost: $%(cost)s"),
        "cost_partial": _("Cost: at least $%(cost)s (some prices unknown)"),
        "agent_budget": _("This agent: $%(spent)s of $%(limit)s this month"),
        "agent_no_budget": _("This agent has no monthly cap"),
        "org_budget": _("Organization: %(percent)s%% of $%(limit)s used this month"),
        "error": _("Error: %(message)s"),
        "stopped": _("Stopped."),
        "disconnected": _("Connection lost. Reload the page to reconnect."),
        "choose_agent": _("Choose an agent first."),
        # files for the next message (chat.js: the attach button, drop and paste; agents.uploads)
        "attach_files": _("Attach files"),
        "attached_files": _("Attached files"),
        "remove_file": _("Remove %(name)s"),
        "uploading": _("Uploading…"),
        "upload_failed": _("Not attached: %(message)s"),
        "chart": _("Chart"),
        # the turn renderer (console/static/console/turn.js): a code block's copy button, a generated file, compaction
        "copy": _("Copy"),
        "copied": _("Copied"),
        "copy_code": _("Copy code"),
        "download": _("Download"),
        "summarizing": _("Summarizing the conversation…"),
        "copy_message": _("Copy text"),
        "regenerate": _("Regenerate"),
        "edit_message": _("Edit"),
        "edit_resend": _("Edit and resend: back in the composer"),
        "watch_browser": _("Watch the browser"),
        "needs_person": _("The agent needs a person here:"),
        "needs_person_take": _("Take over in the live view; the browse waits up to ten minutes."),
        # the missing-capability card (agents.capability_card)
        "capability_missing": _("This needs a capability the agent does not have:"),
        "capability_enable": _("Enable it"),
        "capability_ask": _("Ask the owner to enable it"),
        "status_parked": _("waiting"),
        "budget_exceeded": _("The budget is used up."),
        # delegation panels (capabilities/subagents)
        "delegation_title": _("%(name)s"),
        "delegation_running": _("working"),
        "delegation_completed": _("done"),
        "delegation_failed": _("failed"),
        "delegation_cancelled": _("cancelled"),
        "delegation_awaiting_approval": _("waiting for a person"),
        "delegation_awaiting_answer": _("waiting for your answer"),
        "delegation_usage": _("%(tokens)s tokens · $%(cost)s"),
    }
