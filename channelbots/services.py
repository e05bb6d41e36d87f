"""Every state change of channel bots, bindings, chat accounts and link requests.

Management services take keyword-only `actor=`, run in one transaction with their audit row, and open or
reopen a bot's connection only after the transaction commits (`supervisor.notify_changed`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agenticos import audit, vault
from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
from agenticos.models import Membership
from agenticos.tenancy import Actor
from agents.models import Agent, Environment, ModelProfile
from channelbots.models import (
    AccessMode,
    Binding,
    BotCredential,
    ChannelBot,
    ChannelIdentity,
    ConnectionState,
    CredentialKind,
    FooterMode,
    LinkRequest,
    Platform,
    Transport,
    default_access_policy,
)
from media import transcription as speech

logger = logging.getLogger(__name__)

LINK_TTL = dt.timedelta(minutes=15)
PLACEHOLDERS = ("channel_name", "channel_purpose", "channel_topic", "member_count", "member_list")
CHANNEL_TOOL_IDS = ("get_channel_info", "list_channel_members", "search_channels", "read_channel_history",
                    "send_channel_file")
TELEGRAM_CHANNEL_TOOLS = ("get_channel_info", "list_channel_members")
# A binding's channel_tools_limit, as the capability's default_limit (capabilities/channel_tools MAX_LIMIT).
CHANNEL_TOOLS_MAX_LIMIT = 200
# Who shares a workspace for runs through a binding ("" = as the agent spec says).
WORKSPACE_SCOPES = ("run", "conversation", "channel", "user", "agent")
METADATA_HOSTS = {"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"}
CREDENTIAL_FIELDS = {
    "token": CredentialKind.TOKEN,
    "signing_secret": CredentialKind.SIGNING_SECRET,
    "app_token": CredentialKind.APP_TOKEN,
    "webhook_secret": CredentialKind.WEBHOOK_SECRET,
}
# Which credentials each platform may carry. Telegram's webhook secret is minted here, never pasted.
PLATFORM_CREDENTIALS = {
    Platform.SLACK: ("token", "signing_secret", "app_token"),
    Platform.TELEGRAM: ("token",),
    Platform.MATTERMOST: ("token", "webhook_secret"),
}
# The transcription providers (media.transcription's catalog, shared with the web chat's microphone).
STT_CATALOG = speech.STT_CATALOG


def _record(actor: Actor, action: str, target, details: dict | None = None, ip_address: str | None = None) -> None:
    audit.record(actor=actor.user, organization=actor.organization, action=action, target=target,
                 details=details or {}, ip_address=ip_address)


# ------------------------------------------------------------------ credentials


def set_credential(bot: ChannelBot, kind: str, plaintext: str) -> None:
    sealed = vault.seal(bot.organization_id, plaintext)
    BotCredential.objects.update_or_create(
        bot=bot,
        kind=kind,
        defaults={
            "organization_id": bot.organization_id,
            "key_version": sealed.key_version,
            "wrapped_key": sealed.wrapped_key,
            "ciphertext": sealed.ciphertext,
            "updated_at": timezone.now(),
        },
    )


def reveal_credentials(bot: ChannelBot) -> dict[str, str]:
    """Runtime only: the plaintext credentials of a bot. Never log or return them."""
    return {row.kind: vault.reveal(row) for row in BotCredential.objects.filter(bot=bot)}


def credential_flags(bot: ChannelBot) -> dict[str, bool]:
    kinds = {row for row in BotCredential.objects.filter(bot=bot).values_list("kind", flat=True)}
    return {f"{name}_set": kind in kinds for name, kind in CREDENTIAL_FIELDS.items()}


# ------------------------------------------------------------------ validation


def check_server_url(value: str, *, field: str = "api_base_url") -> str:
    """http/https, a host, no user:pass@, and an address the outbound guard accepts for channel traffic
    (`netguard`, allowance `CHANNEL_ALLOWED_PRIVATE_HOSTS`): instance metadata never, private and loopback
    addresses — a self-hosted Mattermost behind a VPN — only when the operator lists the host, also when a
    name resolves there. A name that does not resolve from here now is accepted; the adapters' clients check
    again on every request (`netguard.pinned_sync_client`), so it cannot be pointed somewhere else later."""
    from agenticos import netguard

    value = (value or "").strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid("Enter the server address as http(s)://host[:port].", details={"field": field})
    if "@" in parts.netloc:
        raise Invalid("The server address cannot carry a user name or password.", details={"field": field})
    if parts.query or parts.fragment:
        raise Invalid("The server address cannot carry a query or fragment.", details={"field": field})
    if parts.hostname.lower().rstrip(".") in METADATA_HOSTS:
        raise Invalid("Instance-metadata addresses are refused.", details={"field": field})
    try:
        netguard.check_url_blocking(value, allowance=netguard.CHANNEL_HOSTS)
    except netguard.Unresolvable:
        pass
    except netguard.Refused as exc:
        raise Invalid(str(exc), details={"field": field}) from None
    return value


def _clean_policy(value: Any, current: dict | None = None) -> dict:
    if not isinstance(value, dict):
        raise Invalid("access_policy must be an object.", details={"field": "access_policy"})
    policy = {**default_access_policy(), **(current or {}), **value}
    unknown = sorted(set(policy) - set(default_access_policy()))
    if unknown:
        raise Invalid(f"Unknown access policy fields: {', '.join(unknown)}.", details={"field": "access_policy"})
    if policy["mode"] not in AccessMode.values:
        raise Invalid(f"access_policy.mode must be one of {AccessMode.values}.", details={"field": "access_policy.mode"})
    for key in ("whitelist", "allowed_groups"):
        items = policy[key]
        if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
            raise Invalid(f"access_policy.{key} must be a list of ids.", details={"field": f"access_policy.{key}"})
        policy[key] = [i.strip() for i in items]
    rpm = policy["rate_limit_rpm"]
    if not isinstance(rpm, int) or isinstance(rpm, bool) or not 1 <= rpm <= 600:
        raise Invalid("access_policy.rate_limit_rpm must be between 1 and 600.",
                      details={"field": "access_policy.rate_limit_rpm"})
    policy["require_link"] = bool(policy["require_link"])
    policy["denied_message"] = str(policy["denied_message"] or "")[:500]
    return policy


def stt_profiles(organization_id, provider: str) -> list:
    """The organization's model profiles whose key serves `provider`'s transcription endpoint, with a key: an
    OpenAI profile for OpenAI, else a profile whose base URL is that provider's host. Speech-to-text profiles
    first, then by label — the order the automatic choice and the console's picker read."""
    entry = STT_CATALOG.get(provider)
    if entry is None:
        return []
    host = urlsplit(entry["base_url"]).hostname or ""
    found = [profile for profile in ModelProfile.objects.select_related("secret")
             .filter(organization_id=organization_id).exclude(secret=None).order_by("label")
             if (provider == "openai" and profile.provider == "openai")
             or (profile.base_url and (urlsplit(profile.base_url).hostname or "") == host)]
    return sorted(found, key=lambda profile: profile.kind != "transcription")


def _clean_stt(data: dict, organization_id) -> tuple[str, str, Any]:
    provider = data.get("stt_provider") or ""
    model = data.get("stt_model") or ""
    profile_id = data.get("stt_profile_id") or None
    if not provider and not model:
        if profile_id:
            raise Invalid("Choose a speech-to-text model before the key that pays for it.",
                          details={"field": "stt_profile_id"})
        return "", "", None
    entry = STT_CATALOG.get(provider)
    if entry is None:
        raise Invalid(f"stt_provider must be one of {sorted(STT_CATALOG)} (or empty).", details={"field": "stt_provider"})
    if model not in entry["models"]:
        raise Invalid(f"stt_model must be one of {entry['models']}.", details={"field": "stt_model"})
    if profile_id is None:
        return provider, model, None
    profile = next((p for p in stt_profiles(organization_id, provider) if str(p.pk) == str(profile_id)), None)
    if profile is None:  # another organization's, unknown, keyless or another provider's: one answer for all
        raise Invalid(f"stt_profile_id must be one of this organization's model profiles with a {provider} key.",
                      details={"field": "stt_profile_id"})
    return provider, model, profile


# ------------------------------------------------------------------ bots


EDITABLE_BOT_FIELDS = ("name", "api_base_url", "access_policy", "stt_provider", "stt_model", "stt_profile_id")


def _apply_bot(bot: ChannelBot, data: dict) -> None:
    if "name" in data:
        name = str(data.get("name") or "").strip()
        if not name:
            raise Invalid("The bot needs a name.", details={"field": "name"})
        bot.name = name[:120]
    if "api_base_url" in data:
        url = str(data.get("api_base_url") or "")
        bot.api_base_url = check_server_url(url) if url else ""
    if bot.platform == Platform.MATTERMOST and not bot.api_base_url:
        raise Invalid(
            "A Mattermost bot needs its server address: there is no api.mattermost.com to fall back to.",
            details={"field": "api_base_url"},
        )
    if "access_policy" in data:
        bot.access_policy = _clean_policy(data["access_policy"], bot.access_policy)
    if "stt_provider" in data or "stt_model" in data or "stt_profile_id" in data:
        bot.stt_provider, bot.stt_model, bot.stt_profile = _clean_stt(
            {"stt_provider": data.get("stt_provider", bot.stt_provider), "stt_model": data.get("stt_model", bot.stt_model),
             "stt_profile_id": data.get("stt_profile_id", bot.stt_profile_id)},
            bot.organization_id,
        )


def _apply_credentials(bot: ChannelBot, data: dict) -> list[str]:
    """Store each credential someone typed; an empty or absent field keeps the stored one."""
    allowed = PLATFORM_CREDENTIALS[Platform(bot.platform)]
    changed: list[str] = []
    for name in CREDENTIAL_FIELDS:
        value = data.get(name)
        if value in (None, ""):
            continue
        if name not in allowed:
            raise Invalid(f"A {bot.platform} bot has no {name}.", details={"field": name})
        if not isinstance(value, str) or len(value.strip()) < 8:
            raise Invalid(f"{name} looks too short to be real.", details={"field": name})
        set_credential(bot, CREDENTIAL_FIELDS[name], value.strip())
        changed.append(name)
    return changed


def create_bot(*, actor: Actor, data: dict, ip_address: str | None = None) -> ChannelBot:
    platform = data.get("platform")
    if platform not in Platform.values:
        raise Invalid("platform must be slack, telegram or mattermost.", details={"field": "platform"})
    transport = data.get("transport") or Transport.WEBHOOK
    if transport not in Transport.values:
        raise Invalid("transport must be webhook or polling.", details={"field": "transport"})
    if not data.get("token"):
        raise Invalid("Paste the bot token.", details={"field": "token"})
    with transaction.atomic():
        bot = ChannelBot(organization=actor.organization, platform=platform, transport=transport, created_by=actor.user)
        _apply_bot(bot, {"name": data.get("name") or "", **{k: data[k] for k in EDITABLE_BOT_FIELDS[1:] if k in data}})
        bot.connection_state = ConnectionState.IDLE if transport == Transport.WEBHOOK else ConnectionState.CONNECTING
        bot.save()
        changed = _apply_credentials(bot, data)
        if platform == Platform.TELEGRAM and transport == Transport.WEBHOOK:
            set_credential(bot, CredentialKind.WEBHOOK_SECRET, secrets.token_urlsafe(32))
        _record(actor, "channelbot.create", bot, {"platform": platform, "transport": transport,
                                                  "credentials": changed}, ip_address)
        _notify(bot)
    return bot


def update_bot(*, actor: Actor, bot: ChannelBot, data: dict, ip_address: str | None = None) -> ChannelBot:
    for fixed in ("platform", "transport"):
        if fixed in data and data[fixed] != getattr(bot, fixed):
            raise Invalid(
                f"The {fixed} of a bot is not edited here: "
                + ("it decides which credentials the row carries." if fixed == "platform"
                   else "use channel_webhook_register (or set_transport), which does both halves."),
                details={"field": fixed},
            )
    with transaction.atomic():
        bot = ChannelBot.objects.select_for_update().get(pk=bot.pk)
        _apply_bot(bot, data)
        changed = _apply_credentials(bot, data)
        bot.updated_at = timezone.now()
        bot.save()
        fields = sorted(k for k in data if k in EDITABLE_BOT_FIELDS)
        _record(actor, "channelbot.update", bot, {"fields": fields, "credentials": changed}, ip_address)
        _notify(bot)
    return bot


def set_transport(*, actor: Actor, bot: ChannelBot, transport: str, ip_address: str | None = None) -> ChannelBot:
    """Switch between webhook and polling. Telegram's webhook secret is minted when the mode changes."""
    if transport not in Transport.values:
        raise Invalid("transport must be webhook or polling.", details={"field": "transport"})
    with transaction.atomic():
        bot = ChannelBot.objects.select_for_update().get(pk=bot.pk)
        if bot.transport != transport:
            bot.transport = transport
            if bot.platform == Platform.TELEGRAM and transport == Transport.WEBHOOK:
                set_credential(bot, CredentialKind.WEBHOOK_SECRET, secrets.token_urlsafe(32))
            bot.connection_state = ConnectionState.IDLE if transport == Transport.WEBHOOK else ConnectionState.CONNECTING
            bot.connection_reason = ""
            bot.updated_at = timezone.now()
            bot.save()
            _record(actor, "channelbot.transport", bot, {"transport": transport}, ip_address)
            _notify(bot)
    return bot


def set_paused(*, actor: Actor, bot: ChannelBot, paused: bool, ip_address: str | None = None) -> ChannelBot:
    with transaction.atomic():
        ChannelBot.objects.filter(pk=bot.pk).update(is_paused=paused, updated_at=timezone.now())
        bot.refresh_from_db()
        _record(actor, "channelbot.pause" if paused else "channelbot.resume", bot, ip_address=ip_address)
        _notify(bot)
    return bot


def delete_bot(*, actor: Actor, bot: ChannelBot, ip_address: str | None = None) -> None:
    bot_id = str(bot.pk)
    with transaction.atomic():
        _record(actor, "channelbot.delete", bot, {"platform": bot.platform}, ip_address)
        bot.delete()
        transaction.on_commit(lambda: _notify_id(bot_id))


def register_webhook(*, actor: Actor, bot: ChannelBot, ip_address: str | None = None) -> str:
    """Put a bot in webhook mode and do both halves: for Telegram, a fresh secret and setWebhook with this
    deployment's URL; Slack and Mattermost have no API for it, so the URL to paste is returned. Used by the
    console's Register button and `manage.py channel_webhook_register`."""
    from channelbots.api import webhook_url
    from channelbots.platforms import PlatformError
    from channelbots.telegram.client import TelegramClient

    bot = set_transport(actor=actor, bot=bot, transport=Transport.WEBHOOK, ip_address=ip_address)
    url = webhook_url(bot) or ""
    if bot.platform != Platform.TELEGRAM:
        return url
    credentials = reveal_credentials(bot)
    client = TelegramClient(bot, credentials)
    try:
        me = client.identity()
        ChannelBot.objects.filter(pk=bot.pk).update(platform_bot_user_id=me.user_id,
                                                    platform_bot_username=me.username)
        client.set_webhook(url, credentials[CredentialKind.WEBHOOK_SECRET])
    except PlatformError as exc:
        record_connection(bot.pk, ConnectionState.NOT_STARTED, f"setWebhook failed: {exc}")
        raise Invalid(f"Telegram refused the webhook: {exc}") from None
    record_connection(bot.pk, ConnectionState.IDLE, "")
    return url


def record_connection(bot_id: Any, state: str, reason: str = "") -> None:
    ChannelBot.objects.filter(pk=bot_id).update(connection_state=state, connection_reason=reason[:300])


def _notify(bot: ChannelBot) -> None:
    bot_id = str(bot.pk)
    transaction.on_commit(lambda: _notify_id(bot_id))


def _notify_id(bot_id: str) -> None:
    from channelbots import supervisor

    supervisor.notify_changed(bot_id)


# ------------------------------------------------------------------ bindings


def _clean_binding(binding: Binding, data: dict) -> None:
    if "environment" in data:
        binding.environment = str(data["environment"] or "production")
    if not Environment.objects.filter(agent=binding.agent, name=binding.environment).exists():
        raise Invalid(f"The agent has no {binding.environment!r} environment yet: publish it first.",
                      details={"field": "environment"})
    if "extra_prompt" in data:
        binding.extra_prompt = str(data["extra_prompt"] or "")[:8000]
    if "workspace_scope" in data:
        scope = str(data["workspace_scope"] or "")
        if scope and scope not in WORKSPACE_SCOPES:
            raise Invalid(f"workspace_scope is one of {list(WORKSPACE_SCOPES)}, or empty for the agent's own.",
                          details={"field": "workspace_scope"})
        binding.workspace_scope = scope
    if "channel_tools" in data:
        tools = data["channel_tools"] or []
        allowed = TELEGRAM_CHANNEL_TOOLS if binding.bot.platform == Platform.TELEGRAM else CHANNEL_TOOL_IDS
        if not isinstance(tools, list) or any(t not in allowed for t in tools):
            raise Invalid(f"channel_tools may only name {list(allowed)} on {binding.bot.platform}.",
                          details={"field": "channel_tools"})
        binding.channel_tools = sorted(set(tools))
    if "channel_tools_limit" in data:
        limit = data["channel_tools_limit"]
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= CHANNEL_TOOLS_MAX_LIMIT:
            raise Invalid(f"channel_tools_limit must be between 1 and {CHANNEL_TOOLS_MAX_LIMIT}.",
                          details={"field": "channel_tools_limit"})
        binding.channel_tools_limit = limit
    if "footer_mode" in data:
        if data["footer_mode"] not in FooterMode.values:
            raise Invalid(f"footer_mode must be one of {FooterMode.values}.", details={"field": "footer_mode"})
        binding.footer_mode = data["footer_mode"]
    if "footer_every_n" in data:
        n = data["footer_every_n"]
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 1000:
            raise Invalid("footer_every_n must be between 1 and 1000.", details={"field": "footer_every_n"})
        binding.footer_every_n = n
    if "footer_threshold_percent" in data:
        percent = data["footer_threshold_percent"]
        if not isinstance(percent, int) or isinstance(percent, bool) or not 1 <= percent <= 100:
            raise Invalid("footer_threshold_percent must be between 1 and 100.",
                          details={"field": "footer_threshold_percent"})
        binding.footer_threshold_percent = percent


def create_binding(*, actor: Actor, agent: Agent, data: dict, ip_address: str | None = None) -> Binding:
    from governance.grants import EDIT, require_agent_access

    require_agent_access(actor, agent, EDIT)
    bot = ChannelBot.objects.filter(organization=actor.organization, pk=_uuid(data.get("bot_id"))).first()
    if bot is None:
        raise Invalid("No such bot in this organization.", details={"field": "bot_id"})
    try:
        with transaction.atomic():
            binding = Binding(organization=actor.organization, agent=agent, bot=bot, created_by=actor.user)
            _clean_binding(binding, data)
            binding.save()
            _record(actor, "channelbinding.create", binding, {"agent_id": str(agent.pk), "bot_id": str(bot.pk),
                                                              "workspace_scope": binding.workspace_scope}, ip_address)
    except IntegrityError:
        raise Conflict("This bot already answers as another agent: a bot serves exactly one agent.",
                       details={"field": "bot_id"}) from None
    return binding


def update_binding(*, actor: Actor, binding: Binding, data: dict, ip_address: str | None = None) -> Binding:
    from governance.grants import EDIT, require_agent_access

    require_agent_access(actor, binding.agent, EDIT)
    with transaction.atomic():
        binding = Binding.objects.select_for_update().select_related("bot", "agent").get(pk=binding.pk)
        _clean_binding(binding, data)
        binding.updated_at = timezone.now()
        binding.save()
        _record(actor, "channelbinding.update", binding, {"fields": sorted(data),
                                                          "workspace_scope": binding.workspace_scope}, ip_address)
    return binding


def delete_binding(*, actor: Actor, binding: Binding, ip_address: str | None = None) -> None:
    from governance.grants import EDIT, require_agent_access

    require_agent_access(actor, binding.agent, EDIT)
    with transaction.atomic():
        _record(actor, "channelbinding.delete", binding, {"bot_id": str(binding.bot_id)}, ip_address)
        binding.delete()


def _uuid(value: Any):
    import uuid

    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError):
        return None


# ------------------------------------------------------------------ identities and linking


def identity_for(bot: ChannelBot, *, workspace: str, account_id: str, display_name: str = "") -> ChannelIdentity:
    identity, created = ChannelIdentity.objects.get_or_create(
        organization_id=bot.organization_id,
        platform=bot.platform,
        workspace=workspace or "",
        account_id=account_id,
        defaults={"display_name": display_name[:200]},
    )
    if not created and display_name and identity.display_name != display_name:
        ChannelIdentity.objects.filter(pk=identity.pk).update(display_name=display_name[:200])
    return identity


def active_membership(identity: ChannelIdentity) -> Membership | None:
    """The linked member's membership, only while they can still sign in."""
    if identity.user_id is None:
        return None
    return (
        Membership.objects.select_related("user", "organization")
        .filter(organization_id=identity.organization_id, user_id=identity.user_id, is_suspended=False,
                user__is_active=True)
        .first()
    )


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint_link(identity: ChannelIdentity, bot: ChannelBot) -> str:
    """A new single-use link (15 minutes); it retires the previous ones. Returns the URL."""
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        LinkRequest.objects.filter(identity=identity, used_at__isnull=True, retired=False).update(retired=True)
        LinkRequest.objects.create(
            organization_id=identity.organization_id,
            identity=identity,
            bot=bot,
            token_hash=_hash(token),
            expires_at=timezone.now() + LINK_TTL,
        )
    return f"{settings.FRONTEND_URL.rstrip('/')}/link/{token}"


def find_link(token: str) -> LinkRequest:
    link = LinkRequest.objects.select_related("identity", "bot").filter(token_hash=_hash(token or "")).first()
    if link is None or not link.usable:
        raise NotFound("This link is unknown, used or expired: send the bot `link` again.")
    return link


def confirm_link(*, actor: Actor, token: str, ip_address: str | None = None) -> ChannelIdentity:
    with transaction.atomic():
        link = find_link(token)
        link = LinkRequest.objects.select_for_update().select_related("identity").get(pk=link.pk)
        if not link.usable:
            raise NotFound("This link is unknown, used or expired: send the bot `link` again.")
        if link.organization_id != actor.organization.pk:
            raise Forbidden("This chat account belongs to another organization's bot: switch organization first.")
        now = timezone.now()
        LinkRequest.objects.filter(pk=link.pk).update(used_at=now)
        identity = link.identity
        identity.user = actor.user
        identity.linked_at = now
        identity.save(update_fields=["user", "linked_at"])
        _record(actor, "chataccount.link", identity, {"platform": identity.platform}, ip_address)
    return identity


def disconnect_identity(*, actor: Actor, identity: ChannelIdentity, ip_address: str | None = None) -> None:
    """The row survives (conversations hang from it); only the owner is cleared."""
    if identity.user_id != actor.user_id:
        raise NotFound("Chat account not found.")
    with transaction.atomic():
        ChannelIdentity.objects.filter(pk=identity.pk).update(user=None, linked_at=None)
        _record(actor, "chataccount.disconnect", identity, {"platform": identity.platform}, ip_address)


# ------------------------------------------------------------------ placeholders


PLACEHOLDER_RE = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


def named_placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER_RE.findall(text or ""))


def flatten_value(value: Any) -> str:
    text = " ".join(str(value).split())
    return text.replace("{", "(").replace("}", ")")[:1000]
