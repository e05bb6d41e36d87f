"""Every page of the console, as a list the browser passes walk (the accessibility pass, the screenshots): one seeded
organization with a row behind every detail page, and each console route either named here as a page or set aside
with the reason it is not one (a form's POST, a JSON or file answer, a redirect). tests/console/test_console_pages.py
holds the list to the routes, so a new page cannot slip past the passes."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse

# Routes that are not a page a person reads, by name, with why.
POST_ACTION = "a form's POST action (redirects back to its page)"
NOT_PAGES: dict[str, str] = {
    "console:chat-archive": POST_ACTION,
    "console:chat-tags": POST_ACTION,
    "console:builder-voice": POST_ACTION,
    "console-triggers:describe": "JSON: the schedule in words",
    "console-triggers:action": POST_ACTION,
    "sandbox-settings-default": POST_ACTION,
    "sandbox-settings-delete": POST_ACTION,
    "console-evals:action": POST_ACTION,
    "console-replays:gate": POST_ACTION,
    "console-replays:tag-run": POST_ACTION,
    "console-replays:cancel": POST_ACTION,
    "console-channels:action": POST_ACTION,
    "console-embeds:rotate-secret": POST_ACTION,
    "console-embeds:logo": POST_ACTION,
    "console-embeds:preview-js": "JavaScript: the preview's widget loader",
    "console-embeds:pause": POST_ACTION,
    "console-embeds:resume": POST_ACTION,
    "console-embeds:delete": POST_ACTION,
    "console-apps:raw": "the app's own HTML, sandboxed in the detail page's frame (the agent wrote it)",
    "console-apps:share": POST_ACTION,
    "console-apps:library": "JavaScript: a vendored library for apps",
    "console-apps:visual-frame": "the sandboxed frame a visual draws in, checked inside the chat",
    "console-remote-agents:delete": POST_ACTION,
    "console-tools:test": POST_ACTION,
    "console-tools:delete": POST_ACTION,
    "console-tools:template-install": POST_ACTION,
    "console-tools:ai-say": POST_ACTION,
    "console-tools:ai-restart": POST_ACTION,
    "console-tools:ai-kit": POST_ACTION,
    "console-tools:ai-finalize": POST_ACTION,
    "console-tools:ai-draft-test": POST_ACTION,
    "console-connections:mcp-add": POST_ACTION,
    "console-connections:mcp-check": POST_ACTION,
    "console-connections:mcp-delete": POST_ACTION,
    "console-connections:catalog-connect": POST_ACTION,
    "console-connections:catalog-disconnect": POST_ACTION,
    "console-connections:catalog-callback": "the OAuth callback: redirects to the connections page",
    "console-connections:db-add": POST_ACTION,
    "console-connections:db-update": POST_ACTION,
    "console-connections:db-delete": POST_ACTION,
    "console-knowledge:create": POST_ACTION,
    "console-knowledge:update": POST_ACTION,
    "console-knowledge:delete": POST_ACTION,
    "console-knowledge:share": POST_ACTION,
    "console-knowledge:unshare": POST_ACTION,
    "console-knowledge:upload": POST_ACTION,
    "console-knowledge:status": "JSON: the documents' ingestion status",
    "console-knowledge:search": "JSON: a test search",
    "console-knowledge:reingest": POST_ACTION,
    "console-knowledge:document-delete": POST_ACTION,
    "console-delegates:add": POST_ACTION,
    "console-delegates:remove": POST_ACTION,
    "notifications:read-all": POST_ACTION,
    "notifications:email": POST_ACTION,
    "notifications:open": "redirects to what the notification is about",
    "browser:live": "the live view of a browsing tool call, only while the call runs",
    "signin:domain": POST_ACTION,
    "signin:audit-export": "a CSV download",
    "signin:mfa": "the second step of a sign-in, only between the password and the session",
    "signin:mfa-passkey-options": "JSON: WebAuthn options",
    "signin:passkey-login-options": "JSON: WebAuthn options",
    "signin:passkey-login": POST_ACTION,
    "signin:passkey-options": "JSON: WebAuthn options",
    "signin:sessions-end": POST_ACTION,
    "signin:member-sign-out": POST_ACTION,
    "console:logout": POST_ACTION,
    "console:switch-organization": POST_ACTION,
    "console:welcome-start": POST_ACTION,
    "console:welcome-skip": POST_ACTION,
    "console:architect-ask": POST_ACTION,
    "console:chat-turns": "JSON: a conversation's turns",
    "console:chat-delete": POST_ACTION,
    "console:chat-rename": POST_ACTION,
    "console:chat-pin": POST_ACTION,
    "console:chat-export": "a Markdown or JSON download",
    "console:chat-share": POST_ACTION,
    "console:chat-share-revoke": POST_ACTION,
    "console:approval-decide": POST_ACTION,
    "console:feedback-case": POST_ACTION,
    "console:agent-new": POST_ACTION,
    "console:agent-import": POST_ACTION,
    "console:builder-basics": POST_ACTION,
    "console:builder-capability": POST_ACTION,
    "console:builder-memory-clear": POST_ACTION,
    "console:builder-publish": POST_ACTION,
    "console:builder-promote": POST_ACTION,
    "console:builder-rollout-start": POST_ACTION,
    "console:builder-rollout-action": POST_ACTION,
    "console:builder-test-turns": "JSON: the test chat's turns",
    "console:builder-export": "a YAML download",
    "console:builder-import": POST_ACTION,
    "console:builder-embeds": POST_ACTION,
    "console:builder-embed-action": POST_ACTION,
    "console:builder-bindings": POST_ACTION,
    "console:builder-binding-delete": POST_ACTION,
    "console:settings-theme": POST_ACTION,
    "console:settings-chat-account-disconnect": POST_ACTION,
    "console:settings-api-key-revoke": POST_ACTION,
    "console:settings-secret-rotate": POST_ACTION,
    "console:settings-secret-delete": POST_ACTION,
    "console:settings-model-test": POST_ACTION,
    "console:settings-member": POST_ACTION,
}

# Pages a signed-out person opens (checked before signing in).
SIGNED_OUT = ["console:login", "console:password_reset", "console:password_reset_done",
              "console:password_reset_complete", "console:password_reset_confirm", "console:invitation",
              "console:shared"]


@dataclass
class Page:
    name: str
    kwargs: dict[str, Any]
    query: str = ""

    @property
    def path(self) -> str:
        return reverse(self.name, kwargs=self.kwargs) + (f"?{self.query}" if self.query else "")


def console_route_names() -> set[str]:
    """The name of every route served by the console package (and the Django auth views it mounts)."""
    names: set[str] = set()

    def walk(patterns, namespace: str = "") -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace == "admin":  # Django's admin (and the auth views it mounts) is not the console
                    continue
                walk(pattern.url_patterns, namespace + (f"{pattern.namespace}:" if pattern.namespace else ""))
                continue
            assert isinstance(pattern, URLPattern)
            callback = pattern.callback
            module = getattr(getattr(callback, "view_class", callback), "__module__", "")
            if pattern.name and (module.startswith("console.") or module.startswith("django.contrib.auth.")):
                names.add(namespace + pattern.name)

    walk(get_resolver().url_patterns)
    return names


def seed(org, owner) -> dict[str, Any]:
    """A row behind every detail page of the console, in `org`, made by its owner; the kwargs each page needs."""
    from agenticos.models import Invitation
    from agents import sharing
    from agents.models import Feedback, Message
    from capabilities.artifacts import services as artifacts
    from capabilities.custom_tools.models import ToolBuilderSession
    from capabilities.models import DatabaseConnection
    from capabilities.remote_agents.models import RemoteAgent
    from channelbots import services as bots
    from evals import services as evals
    from governance.models import Approval, SpendEntry
    from identity import roles
    from notifications.services import notify
    from tests import factories
    from tests.api.conftest import actor_of
    from tests.console.conftest import make_turn
    from tests.console.test_replays_console import _finished_replay
    from triggers import services as triggers

    actor = actor_of(owner, org)
    profile = factories.model_profile(org, label="Demo model")
    agent = factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}, {"id": "charts"}],
                                      starter_prompts=["What time is it?"])
    conversation, run = make_turn(org, owner, agent, prompt="Chart my sales")
    make_turn(org, owner, agent, prompt="Why did it stop?", status="failed", tools=())
    SpendEntry.objects.create(organization=org, agent=agent, run=run, surface="web", model="demo",
                              input_tokens=120, output_tokens=30, cost_usd=Decimal("0.0120"))
    parked_conversation, parked = make_turn(org, owner, agent, prompt="Send the report", status="awaiting_approval",
                                            tools=("send_email",))
    Approval.objects.create(organization=org, run=parked, tool_call_id="approve-1", tool_id="email",
                            tool_name="send_email", args={"to": "ada@example.com"})
    answer = Message.objects.filter(run=run, role="assistant").first()
    Feedback.objects.create(organization=org, agent=agent, message=answer, run=run, user=owner, rating="down",
                            comment="Too long.")
    share = sharing.share(actor=actor, conversation_id=conversation.pk)
    trigger, _secret = triggers.create_trigger(actor=actor, agent=agent, data={
        "name": "Nightly", "kind": "schedule", "prompt": "Write the nightly report.", "cron": "0 9 * * *",
        "timezone": "UTC"})
    suite = evals.create_suite(actor=actor, agent=agent, data={"name": "Smoke", "cases": [
        {"name": "greets", "prompt": "Say hello.", "checks": [{"kind": "contains", "value": "hello"}]}]})
    suite_run = evals.start_suite_run(actor=actor, suite=suite, target="production", enqueue=False)
    second_run = evals.start_suite_run(actor=actor, suite=suite, target="draft", enqueue=False)
    replay = _finished_replay(agent, owner)
    bot = bots.create_bot(actor=actor, data={"platform": "slack", "name": "Helpdesk bot", "token": "xoxb-look-0001"})
    binding = bots.create_binding(actor=actor, agent=agent, data={"bot_id": str(bot.pk)})
    embed = factories.embed(agent, kind="widget", created_by=owner)
    app = artifacts.publish(organization_id=org.pk, agent_id=agent.pk, environment="production", name="weekly",
                            owner_id=owner.pk, text="<h1>Weekly</h1>", fmt="html", title="Weekly").artifact
    remote = RemoteAgent.objects.create(organization=org, created_by=owner, name="Weather Desk",
                                        card_url="https://desk.partner.test/card.json",
                                        endpoint_url="https://desk.partner.test/rpc", card={})
    tool = factories.custom_tool(org, url="https://api.example.com/orders")
    session = ToolBuilderSession.objects.create(organization=org, title="Orders tool", created_by=owner)
    DatabaseConnection.objects.create(organization=org, name="shop", permission="read", key_version=1,
                                      wrapped_key=b"k", ciphertext=b"c")
    collection = factories.collection(org, name="Handbook")
    role = roles.create_role(actor=actor, name="Reviewer", permissions=["agents:view", "approvals:decide"])
    notify(organization=org, recipient=owner, kind="test", text="Your report is ready", link="/activity/")
    factories.secret(org, name="openai")
    Invitation.objects.create(organization=org, email="new@example.com", token_hash="0" * 64, invited_by=owner)
    return {"agent": agent, "conversation": conversation, "run": run, "parked": parked_conversation,
            "share": share, "trigger": trigger, "suite": suite, "suite_run": suite_run, "second_run": second_run, "replay": replay,
            "bot": bot, "binding": binding, "embed": embed, "app": app, "remote": remote, "tool": tool,
            "session": session, "collection": collection, "profile": profile, "role": role}


def pages(world: dict[str, Any]) -> list[Page]:
    """Every console page with a seeded object behind it (signed-out pages first, then an owner's)."""
    agent = world["agent"].pk
    kwargs: dict[str, dict[str, Any]] = {
        "console:password_reset_confirm": {"uidb64": "MQ", "token": "set-password"},
        "console:invitation": {"token": "an-unknown-invitation"},
        "console:link-chat-account": {"token": "an-unknown-link"},
        "console:shared": {"token": world["share"].token},
        "console:chat-conversation": {"conversation_id": world["conversation"].pk},
        "console:run-detail": {"run_id": world["run"].pk},
        "console:builder": {"agent_id": agent},
        "console:builder-diff": {"agent_id": agent},
        "console:settings-model": {"profile_id": world["profile"].pk},
        "console-triggers:list": {"agent_id": agent},
        "console-triggers:edit": {"agent_id": agent, "trigger_id": world["trigger"].pk},
        "console-evals:list": {"agent_id": agent},
        "console-evals:compare": {"agent_id": agent},
        "console-evals:run": {"agent_id": agent, "run_id": world["suite_run"].pk},
        "console-replays:list": {"agent_id": agent},
        "console-replays:detail": {"agent_id": agent, "replay_id": world["replay"].pk},
        "console-delegates:list": {"agent_id": agent},
        "console-channels:bot": {"bot_id": world["bot"].pk},
        "console-channels:binding": {"agent_id": agent, "binding_id": world["binding"].pk},
        "console-embeds:edit": {"agent_id": agent, "embed_id": world["embed"].pk},
        "console-embeds:preview": {"agent_id": agent, "embed_id": world["embed"].pk},
        "console-apps:detail": {"artifact_id": world["app"].pk},
        "console-remote-agents:detail": {"pk": world["remote"].pk},
        "console-tools:edit": {"pk": world["tool"].pk},
        "console-tools:ai-session": {"pk": world["session"].pk},
        "console-knowledge:detail": {"pk": world["collection"].pk},
        "signin:role": {"role_id": world["role"].pk},
    }
    query = {"console-evals:compare": f"first={world['suite_run'].pk}&second={world['second_run'].pk}",
             "console:builder-diff": "from=1&to=draft"}
    names = sorted(console_route_names() - set(NOT_PAGES), key=lambda n: (n not in SIGNED_OUT, n))
    return [Page(name, kwargs.get(name, {}), query.get(name, "")) for name in names]
