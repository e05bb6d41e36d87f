"""Console routes of an embed's own page (included in config.urls before the console's). Each ends in a slash,
so none is taken for an action of the Builder's `agents/<id>/embeds/<id>/<action>` route."""

from django.urls import path

from console import embeds

app_name = "console-embeds"

_EMBED = "agents/<uuid:agent_id>/embeds/<uuid:embed_id>/"

urlpatterns = [
    path("embeds/", embeds.embed_list, name="list"),
    path(_EMBED, embeds.edit, name="edit"),
    path(_EMBED + "jwt-secret/", embeds.rotate_secret, name="rotate-secret"),
    path(_EMBED + "logo/", embeds.upload_logo, name="logo"),
    path(_EMBED + "preview/", embeds.preview, name="preview"),
    path(_EMBED + "preview/widget.js", embeds.preview_js, name="preview-js"),
    path(_EMBED + "pause/", embeds.action, {"action": "pause"}, name="pause"),
    path(_EMBED + "resume/", embeds.action, {"action": "resume"}, name="resume"),
    path(_EMBED + "delete/", embeds.action, {"action": "delete"}, name="delete"),
]
