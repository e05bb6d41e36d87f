"""Settings → Chat: the model profile that titles conversations after their first exchange (agents.titles) and
the speech-to-text one that transcribes the composer's microphone (media.transcription)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from agenticos.tenancy import Actor
from agents import titles
from agents.models import ChatSettings, ModelProfile
from console.base import console_view
from console.settings_views import _page as settings_page
from media import transcription


@console_view("agents:view")
def chat_settings(request: HttpRequest, actor: Actor) -> HttpResponse:
    if request.method == "POST":
        actor.require("models:manage")  # the role decides before the choice is read
        titles.choose_title_profile(actor=actor, profile_id=request.POST.get("title_profile", ""))
        transcription.choose_chat_profile(actor=actor, profile_id=request.POST.get("voice_profile", ""))
        messages.success(request, _("The chat settings were saved."))
        return redirect("console:settings-chat")
    chosen = ChatSettings.objects.filter(organization=actor.organization).first()
    profiles = ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT).order_by("label")
    return settings_page(request, "console/settings/chat.html", "chat", {
        "profiles": profiles,
        "title_profile_id": str(chosen.title_profile_id) if chosen and chosen.title_profile_id else "",
        "voice_profiles": ModelProfile.objects.filter(organization=actor.organization,
                                                      kind=ModelProfile.Kind.TRANSCRIPTION).order_by("label"),
        "voice_profile_id": str(chosen.voice_profile_id) if chosen and chosen.voice_profile_id else "",
    })
