"""/api/v1/ knowledge endpoints: collections, documents, context files, skills, memory."""

from agenticos.api import route
from knowledge import api, api_agent_memory

urlpatterns = [
    *route("collections", api.CollectionListView, "api-collections"),
    *route("collections/<uuid:pk>", api.CollectionDetailView, "api-collection"),
    *route("collections/<uuid:pk>/grants", api.CollectionGrantListView, "api-collection-grants"),
    *route("collections/<uuid:pk>/grants/<int:user_id>", api.CollectionGrantDetailView, "api-collection-grant"),
    *route("collections/<uuid:pk>/documents", api.DocumentListView, "api-collection-documents"),
    *route("documents/<uuid:pk>", api.DocumentDetailView, "api-document"),
    *route("documents/<uuid:pk>/reingest", api.DocumentReingestView, "api-document-reingest"),
    *route("context", api.ContextFileListView, "api-context-files"),
    *route("context/<uuid:pk>", api.ContextFileDetailView, "api-context-file"),
]

urlpatterns += [
    *route("memory", api.MyMemoryView, "api-memory"),
    *route("memory/clear", api.ClearMemoryView, "api-memory-clear"),
    *route("memory/notes/<int:pk>", api.MyMemoryNoteView, "api-memory-note"),
    *route("memory/notes/<int:pk>/<slug:action>", api.MyMemoryNoteActionView, "api-memory-note-action"),
    *route("memory/person/<int:user_id>", api.PersonMemoryView, "api-memory-person"),
    *route("memory/agents/<uuid:agent_id>/clear", api_agent_memory.AgentMemoryClearView, "api-memory-agent-clear"),
]

urlpatterns += [
    *route("skills", api.SkillListView, "api-skills"),
    *route("skills/proposals", api.SkillProposalListView, "api-skill-proposals"),
    *route("skills/proposals/<uuid:pk>/<slug:decision>", api.SkillProposalDecisionView,
           "api-skill-proposal-decision"),
    *route("skills/<uuid:pk>", api.SkillDetailView, "api-skill"),
]
