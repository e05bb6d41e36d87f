"""The addresses of an embed for console templates, built by embeds.services as the API builds them."""

from __future__ import annotations

from django import template

from embeds import services
from embeds.models import Embed

register = template.Library()


@register.filter
def embed_socket_url(embed: Embed) -> str:
    """The WebSocket a widget's script opens (and a raw socket client connects to)."""
    return services.socket_url(embed)
