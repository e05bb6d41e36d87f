from django.urls import path

from interop import openai_views

urlpatterns = [
    path("v1/chat/completions", openai_views.chat_completions, name="openai-chat-completions"),
    path("v1/models", openai_views.list_models, name="openai-models"),
]
