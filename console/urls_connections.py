"""Console routes of Connections: MCP servers and database connections (remote agents have their own)."""

from django.urls import path

from console import connections

app_name = "console-connections"

urlpatterns = [
    path("connections/", connections.connection_list, name="list"),
    path("connections/mcp/", connections.mcp_add, name="mcp-add"),
    path("connections/mcp/<uuid:pk>/check", connections.mcp_check, name="mcp-check"),
    path("connections/mcp/<uuid:pk>/delete", connections.mcp_delete, name="mcp-delete"),
    path("connections/catalog/<slug:key>/connect", connections.catalog_connect, name="catalog-connect"),
    path("connections/catalog/<slug:key>/disconnect", connections.catalog_disconnect, name="catalog-disconnect"),
    path("connections/catalog/callback", connections.catalog_callback, name="catalog-callback"),
    path("connections/databases/", connections.db_add, name="db-add"),
    path("connections/databases/<uuid:pk>/", connections.db_update, name="db-update"),
    path("connections/databases/<uuid:pk>/delete", connections.db_delete, name="db-delete"),
]
