"""Console routes of Knowledge: collections, their documents and the search preview."""

from django.urls import path

from console import knowledge

app_name = "console-knowledge"

urlpatterns = [
    path("knowledge/", knowledge.collection_list, name="list"),
    path("knowledge/new", knowledge.collection_create, name="create"),
    path("knowledge/<uuid:pk>/", knowledge.collection_detail, name="detail"),
    path("knowledge/<uuid:pk>/edit", knowledge.collection_update, name="update"),
    path("knowledge/<uuid:pk>/delete", knowledge.collection_delete, name="delete"),
    path("knowledge/<uuid:pk>/sharing", knowledge.collection_share, name="share"),
    path("knowledge/<uuid:pk>/sharing/<int:user_id>/remove", knowledge.collection_unshare, name="unshare"),
    path("knowledge/<uuid:pk>/documents", knowledge.document_upload, name="upload"),
    path("knowledge/<uuid:pk>/documents.json", knowledge.document_status, name="status"),
    path("knowledge/<uuid:pk>/search.json", knowledge.collection_search, name="search"),
    path("knowledge/documents/<uuid:pk>/reingest", knowledge.document_reingest, name="reingest"),
    path("knowledge/documents/<uuid:pk>/delete", knowledge.document_delete, name="document-delete"),
]
