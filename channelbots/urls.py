"""HTTP routes of the channelbots app, with their full paths: include at the site root —
`path("", include("channelbots.urls"))` in config/urls.py."""

from __future__ import annotations

from agenticos.api import route
from channelbots import api, webhooks

urlpatterns = [
    # Management (session or API key, X-Organization-Id).
    *route("api/v1/bots", api.BotsView, "channel-bots"),
    *route("api/v1/bots/<str:bot_id>", api.BotDetailView, "channel-bot-detail"),
    *route("api/v1/bots/<str:bot_id>/pause", api.BotPauseView, "channel-bot-pause"),
    *route("api/v1/bots/<str:bot_id>/resume", api.BotResumeView, "channel-bot-resume"),
    *route("api/v1/agents/<str:agent_id>/bindings", api.AgentBindingsView, "agent-bindings"),
    *route("api/v1/agents/<str:agent_id>/bindings/<str:binding_id>", api.BindingDetailView, "agent-binding-detail"),
    *route("api/v1/chat-accounts", api.ChatAccountsView, "chat-accounts"),
    *route("api/v1/chat-accounts/<str:identity_id>", api.ChatAccountDetailView, "chat-account-detail"),
    *route("api/v1/chat-links/<str:token>", api.LinkView, "chat-link"),
    # Platforms (no session; each verifies its own way).
    *route("api/v1/slack/<str:bot_id>/events", webhooks.slack_events, "slack-events"),
    *route("api/v1/slack/<str:bot_id>/interactions", webhooks.slack_interactions, "slack-interactions"),
    *route("api/v1/telegram/<str:bot_id>/webhook", webhooks.telegram_webhook, "telegram-webhook"),
    *route("api/v1/mattermost/<str:bot_id>/webhook", webhooks.mattermost_webhook, "mattermost-webhook"),
    *route("api/v1/mattermost/<str:bot_id>/actions", webhooks.mattermost_actions, "mattermost-actions"),
]
