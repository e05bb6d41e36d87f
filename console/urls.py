"""Console routes. Included last in config.urls: `path("", include("console.urls"))`."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from console import (
    architect,
    availability,
    builder,
    chat_settings,
    feedback,
    rollouts,
    settings_views,
    sharing,
    signin,
    test_chat,
    views,
)

app_name = "console"

urlpatterns = [
    # Sign in / out and password reset (emails go through EMAIL_BACKEND: the console in dev).
    path("login/", signin.SignInView.as_view(), name="login"),  # password, or the organization's SSO
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "password-reset/",
        auth_views.PasswordResetView.as_view(
            success_url=reverse_lazy("console:password_reset_done"),
            email_template_name="registration/password_reset_email.txt",
            subject_template_name="registration/password_reset_subject.txt",
        ),
        name="password_reset",
    ),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password-reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(success_url=reverse_lazy("console:password_reset_complete")),
        name="password_reset_confirm",
    ),
    path("password-reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("organizations/switch/", views.switch_organization, name="switch-organization"),
    # The welcome interview with the Architect (console/architect.py), offered on the home page.
    path("welcome/start/", architect.welcome_start, name="welcome-start"),
    path("welcome/skip/", architect.welcome_skip, name="welcome-skip"),
    path("architect/ask/", architect.ask_architect, name="architect-ask"),
    path("invitations/<str:token>", views.accept_invitation, name="invitation"),
    # Where a chat bot's `link` answer points (channelbots.services.mint_link: {FRONTEND_URL}/link/{token}).
    path("link/<str:token>", views.link_chat_account, name="link-chat-account"),
    # Screens
    path("", views.home, name="home"),
    path("chat/", views.chat, name="chat"),
    path("chat/<uuid:conversation_id>/", views.chat, name="chat-conversation"),
    path("chat/<uuid:conversation_id>/turns.json", views.chat_turns, name="chat-turns"),
    path("chat/<uuid:conversation_id>/delete", views.delete_conversation, name="chat-delete"),
    path("chat/<uuid:conversation_id>/rename", views.rename_conversation_view, name="chat-rename"),
    path("chat/<uuid:conversation_id>/pin", views.pin_conversation_view, name="chat-pin"),
    path("chat/<uuid:conversation_id>/archive", views.archive_conversation_view, name="chat-archive"),
    path("chat/<uuid:conversation_id>/tags", views.tag_conversation_view, name="chat-tags"),
    path("chat/<uuid:conversation_id>/export.<str:fmt>", views.export_conversation, name="chat-export"),
    path("chat/<uuid:conversation_id>/share", sharing.share_conversation, name="chat-share"),
    path("chat/<uuid:conversation_id>/share/revoke", sharing.revoke_share, name="chat-share-revoke"),
    path("shared/<str:token>/", sharing.shared_page, name="shared"),
    path("approvals/", views.approvals, name="approvals"),
    path("approvals/<uuid:approval_id>/decide", views.approval_decide, name="approval-decide"),
    path("activity/", views.activity, name="activity"),
    path("activity/runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
    path("activity/feedback/", feedback.feedback_list, name="feedback"),
    path("activity/feedback/<int:feedback_id>/case", feedback.feedback_to_case, name="feedback-case"),
    path("usage/", views.usage, name="usage"),
    # Agents and the Builder
    path("agents/", builder.agent_list, name="agents"),
    path("agents/new", builder.new_agent, name="agent-new"),
    path("agents/import", builder.import_agent, name="agent-import"),
    path("agents/<uuid:agent_id>/", builder.builder, name="builder"),
    path("agents/<uuid:agent_id>/basics", builder.save_basics, name="builder-basics"),
    path("agents/<uuid:agent_id>/toolbox/<str:capability_id>", builder.save_capability, name="builder-capability"),
    path("agents/<uuid:agent_id>/memory/clear", builder.clear_memory, name="builder-memory-clear"),
    path("agents/<uuid:agent_id>/publish", builder.publish, name="builder-publish"),
    path("agents/<uuid:agent_id>/promote", builder.promote, name="builder-promote"),
    path("agents/<uuid:agent_id>/rollouts", rollouts.start, name="builder-rollout-start"),
    path("agents/<uuid:agent_id>/rollouts/<uuid:rollout_id>/<str:action>", rollouts.act,
         name="builder-rollout-action"),
    path("agents/<uuid:agent_id>/diff", builder.diff, name="builder-diff"),
    path("agents/<uuid:agent_id>/test/<uuid:conversation_id>/turns.json", test_chat.test_chat_turns,
         name="builder-test-turns"),
    path("agents/<uuid:agent_id>/export.yaml", builder.export_yaml, name="builder-export"),
    path("agents/<uuid:agent_id>/import", builder.import_into, name="builder-import"),
    path("agents/<uuid:agent_id>/embeds", availability.create_embed, name="builder-embeds"),
    path("agents/<uuid:agent_id>/embeds/<uuid:embed_id>/<str:action>", availability.embed_action,
         name="builder-embed-action"),
    path("agents/<uuid:agent_id>/bindings", availability.create_binding, name="builder-bindings"),
    path("agents/<uuid:agent_id>/bindings/<uuid:binding_id>/delete", availability.delete_binding,
         name="builder-binding-delete"),
    # Settings
    path("settings/", settings_views.profile, name="settings"),
    path("settings/theme", settings_views.theme, name="settings-theme"),
    path("settings/chat-accounts/", settings_views.chat_accounts, name="settings-chat-accounts"),
    path("settings/chat-accounts/<int:identity_id>/disconnect", settings_views.disconnect_chat_account,
         name="settings-chat-account-disconnect"),
    path("settings/api-keys/", settings_views.api_keys, name="settings-api-keys"),
    path("settings/api-keys/<int:key_id>/revoke", settings_views.revoke_api_key, name="settings-api-key-revoke"),
    path("settings/secrets/", settings_views.secrets, name="settings-secrets"),
    path("settings/secrets/<uuid:secret_id>/rotate", settings_views.rotate_secret, name="settings-secret-rotate"),
    path("settings/secrets/<uuid:secret_id>/delete", settings_views.delete_secret, name="settings-secret-delete"),
    path("settings/models/", settings_views.model_profiles, name="settings-models"),
    path("settings/chat/", chat_settings.chat_settings, name="settings-chat"),
    path("settings/models/<uuid:profile_id>/", settings_views.edit_model_profile, name="settings-model"),
    path("settings/models/<uuid:profile_id>/test", settings_views.test_model_profile, name="settings-model-test"),
    path("settings/members/", settings_views.members, name="settings-members"),
    path("settings/members/<int:membership_id>", settings_views.change_member, name="settings-member"),
    path("settings/budget/", settings_views.budget, name="settings-budget"),
    path("settings/retention/", settings_views.data_retention, name="settings-retention"),
]
