"""Console routes of Channels (bots) and a binding's settings (included in config.urls before the console's)."""

from django.urls import path

from console import channels

app_name = "console-channels"

urlpatterns = [
    path("channels/", channels.channel_list, name="list"),
    path("channels/<uuid:bot_id>/", channels.bot_detail, name="bot"),
    path("channels/<uuid:bot_id>/<str:action>", channels.bot_action, name="action"),
    path("agents/<uuid:agent_id>/bindings/<uuid:binding_id>/", channels.binding_detail, name="binding"),
]
