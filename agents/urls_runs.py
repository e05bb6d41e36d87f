"""/api/v1/ runs and conversations."""

from agenticos.api import route
from agents import api_architect, api_conversations
from agents import api_runs as api
from agents.api_specialists import PromoteSpecialistView

urlpatterns = [
    *route("agents/<uuid:agent_id>/run", api.AgentRunView, "agent-run"),
    *route("runs", api.RunListView, "runs"),
    *route("runs/<uuid:run_id>", api.RunDetailView, "run-detail"),
    *route("runs/<uuid:run_id>/stop", api.RunStopView, "run-stop"),
    *route("runs/<uuid:run_id>/resume", api.RunResumeView, "run-resume"),
    *route("runs/<uuid:run_id>/questions", api.RunQuestionsView, "run-questions"),
    *route("runs/<uuid:run_id>/answers", api.RunAnswersView, "run-answers"),
    *route("runs/<uuid:run_id>/delegations/<str:task_id>/promote", PromoteSpecialistView,
           "run-delegation-promote"),
    *route("runs/<uuid:run_id>/proposals/<str:call_id>/accept", api_architect.ProposalAcceptView,
           "run-proposal-accept"),
    *route("conversations", api.ConversationListView, "conversations"),
    *route("conversations/<uuid:conversation_id>", api_conversations.ConversationDetailView, "conversation-detail"),
    *route("conversations/<uuid:conversation_id>/messages", api.ConversationMessagesView, "conversation-messages"),
    *route("conversations/<uuid:conversation_id>/branch", api_conversations.ConversationBranchView,
           "conversation-branch"),
    *route("conversations/<uuid:conversation_id>/messages/<int:message_id>/regenerate",
           api_conversations.MessageRegenerateView, "message-regenerate"),
    *route("conversations/<uuid:conversation_id>/messages/<int:message_id>/feedback",
           api_conversations.MessageFeedbackView, "message-feedback"),
]
