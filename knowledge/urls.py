"""/api/v1/ knowledge endpoints: collections, documents, context files, skills, memory."""

from django.urls import path

from knowledge import api

urlpatterns = [
    path("collections/", api.CollectionListView.as_view(), name="api-collections"),
    path("collections/<uuid:pk>/", api.CollectionDetailView.as_view(), name="api-collection"),
    path("collections/<uuid:pk>/grants/", api.CollectionGrantListView.as_view(), name="api-collection-grants"),
    path("collections/<uuid:pk>/grants/<int:user_id>/", api.CollectionGrantDetailView.as_view(),
         name="api-collection-grant"),
    path("collections/<uuid:pk>/documents/", api.DocumentListView.as_view(), name="api-collection-documents"),
    path("documents/<uuid:pk>/", api.DocumentDetailView.as_view(), name="api-document"),
    path("documents/<uuid:pk>/reingest/", api.DocumentReingestView.as_view(), name="api-document-reingest"),
    path("context/", api.ContextFileListView.as_view(), name="api-context-files"),
    path("context/<uuid:pk>/", api.ContextFileDetailView.as_view(), name="api-context-file"),
]

urlpatterns += [
    path("memory/", api.MyMemoryView.as_view(), name="api-memory"),
    path("memory/clear/", api.ClearMemoryView.as_view(), name="api-memory-clear"),
    path("memory/notes/<int:pk>/", api.MyMemoryNoteView.as_view(), name="api-memory-note"),
    path("memory/notes/<int:pk>/<slug:action>/", api.MyMemoryNoteActionView.as_view(), name="api-memory-note-action"),
    path("memory/person/<int:user_id>/", api.PersonMemoryView.as_view(), name="api-memory-person"),
]

urlpatterns += [
    path("skills/", api.SkillListView.as_view(), name="api-skills"),
    path("skills/proposals/", api.SkillProposalListView.as_view(), name="api-skill-proposals"),
    path("skills/proposals/<uuid:pk>/<slug:decision>/", api.SkillProposalDecisionView.as_view(),
         name="api-skill-proposal-decision"),
    path("skills/<uuid:pk>/", api.SkillDetailView.as_view(), name="api-skill"),
]
