"""HTTP routes of the channelbots app, with their full paths: include at the site root —
`path("", include("channelbots.urls"))` in agenticos/urls.py."""

from __future__ import annotations

from django.urls import path

from channelbots import api, webhooks

urlpatterns = [
    # Management (session or API key, X-Organization-Id).
    path("api/v1/bots", api.BotsView.as_view(), name="channel-bots"),
    path("api/v1/bots/<str:bot_id>", api.BotDetailView.as_view(), name="channel-bot-detail"),
    path("api/v1/bots/<str:bot_id>/pause", api.BotPauseView.as_view(), name="channel-bot-pause"),
    path("api/v1/bots/<str:bot_id>/resume", api.BotResumeView.as_view(), name="channel-bot-resume"),
    path("api/v1/agents/<str:agent_id>/bindings", api.AgentBindingsView.as_view(), name="agent-bindings"),
    path("api/v1/agents/<str:agent_id>/bindings/<str:binding_id>", api.BindingDetailView.as_view(),
         name="agent-binding-detail"),
    path("api/v1/chat-accounts", api.ChatAccountsView.as_view(), name="chat-accounts"),
    path("api/v1/chat-accounts/<str:identity_id>", api.ChatAccountDetailView.as_view(), name="chat-account-detail"),
    path("api/v1/chat-links/<str:token>", api.LinkView.as_view(), name="chat-link"),
    # Platforms (no session; each verifies its own way).
    path("api/v1/slack/<str:bot_id>/events", webhooks.slack_events, name="slack-events"),
    path("api/v1/telegram/<str:bot_id>/webhook", webhooks.telegram_webhook, name="telegram-webhook"),
    path("api/v1/mattermost/<str:bot_id>/webhook", webhooks.mattermost_webhook, name="mattermost-webhook"),
]
