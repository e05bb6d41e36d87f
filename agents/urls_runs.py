from django.urls import path

from agents import api_runs as api

urlpatterns = [
    path("agents/<uuid:agent_id>/run", api.AgentRunView.as_view(), name="agent-run"),
    path("runs", api.RunListView.as_view(), name="runs"),
    path("runs/<uuid:run_id>", api.RunDetailView.as_view(), name="run-detail"),
    path("runs/<uuid:run_id>/stop", api.RunStopView.as_view(), name="run-stop"),
    path("runs/<uuid:run_id>/resume", api.RunResumeView.as_view(), name="run-resume"),
    path("runs/<uuid:run_id>/questions", api.RunQuestionsView.as_view(), name="run-questions"),
    path("runs/<uuid:run_id>/answers", api.RunAnswersView.as_view(), name="run-answers"),
    path("conversations", api.ConversationListView.as_view(), name="conversations"),
    path("conversations/<uuid:conversation_id>/messages", api.ConversationMessagesView.as_view(), name="conversation-messages"),
]
