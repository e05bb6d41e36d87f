"""The browser binding's settings, and the checks publishing makes on them."""

from __future__ import annotations

import re
import zoneinfo
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agenticos import netguard
from capabilities.browser import policy
from capabilities.browser.session import cdp_address, cdp_host_allowed

CDP_HOSTS = "BROWSER_CDP_ALLOWED_HOSTS"
_LOCALE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


class BrowserConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cdp_url: str = Field(default="", description="Empty: this deployment's own browser service. Otherwise another "
                                                 "Chromium DevTools endpoint the operator allows, e.g. "
                                                 "http://browser:9222.",
                         json_schema_extra={"x-advanced": True})
    allowed_domains: list[str] | None = Field(
        default=None, description="Hosts the browser may be on (patterns like *.example.com); empty: any public host. "
                                  "An internal address only for a host this deployment's operator allows.")
    max_steps: int = Field(default=50, ge=1, le=200, description="Steps per browse, each one model request.")
    vision: bool = Field(default=False, description="Also send each step's screenshot to the model.")
    candidate_cap: int = Field(default=60, ge=2, le=200, description="How many elements one step may offer.")
    preview: bool = Field(default=True, description="Send the browser's view to the chat while it browses (a small "
                                                    "picture on the browse's step, for who may watch it).")
    preview_width: int = Field(default=1024, ge=320, le=1920,
                               description="The width of the page, in pixels, and so of the view's frames.")
    step_model_profile_id: str | None = Field(
        default=None, description="A model profile asked at each browsing step instead of the agent's model.")
    connection: Literal["built_in", "proxy", "hosted"] = Field(default="built_in", json_schema_extra={
        "x-enum-labels": {"built_in": "This deployment's browser", "proxy": "Through a proxy",
                          "hosted": "A hosted browser"}})
    proxy_url: str = Field(default="", description="With proxy: http://, https:// or socks5:// host and port; the "
                                                   "binding's secret, if any, is its username:password.")
    hosted_url: str = Field(default="", description="With hosted: the service's wss:// CDP address; the binding's "
                                                    "secret is its key.")
    hosted_key_param: str = Field(default="apiKey", pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    timezone: str = Field(default="", description="An IANA time zone the browser declares.")
    locale: str = Field(default="", description="A language tag like pl-PL (Accept-Language, navigator.language).")
    run_in_background: bool = Field(
        default=True, description="Let the model leave a browse running and read its result when it arrives, instead "
                                  "of always waiting for it.")

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("an empty list would refuse every page; leave it unset to allow any public host")
        return list(dict.fromkeys(policy.normalize_pattern(entry) for entry in value))

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        if value:
            try:
                zoneinfo.ZoneInfo(value)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"{value!r} is not an IANA time zone") from None
        return value

    @field_validator("locale")
    @classmethod
    def _locale(cls, value: str) -> str:
        if value and not _LOCALE.match(value):
            raise ValueError(f"{value!r} is not a language tag like en-US")
        return value

    @model_validator(mode="after")
    def _connection_fields(self) -> BrowserConfig:
        if self.connection == "proxy":
            parts = urlsplit(self.proxy_url)
            if parts.scheme not in ("http", "https", "socks5") or not parts.hostname or not parts.port:
                raise ValueError("proxy_url must be http://, https:// or socks5:// with a host and a port")
        elif self.proxy_url:
            raise ValueError("proxy_url is only used with connection proxy")
        if self.connection == "hosted":
            parts = urlsplit(self.hosted_url)
            if parts.scheme != "wss" or not parts.hostname:
                raise ValueError("hosted_url must be a wss:// address")
        elif self.hosted_url:
            raise ValueError("hosted_url is only used with connection hosted")
        return self


def _internal(url: str) -> str | None:
    """Why an address the author chose is inside this deployment's network (unless the operator listed it)."""
    try:
        netguard.check_url_blocking(url.replace("socks5://", "http://").replace("wss://", "https://"),
                                    allowance=CDP_HOSTS)
    except netguard.Unresolvable:
        return None  # checked again when a browse starts
    except netguard.AddressRefused as exc:
        return str(exc)
    return None


def _private_domain(entry: str) -> str | None:
    """Why an `allowed_domains` entry names a host inside this deployment's network the operator did not list
    in BROWSER_ALLOWED_PRIVATE_HOSTS (a pattern by the domain it ends in), or None. A name that does not resolve
    now passes: every request is checked again when it is made (policy.py)."""
    host = entry[2:] if entry.startswith("*.") else entry
    netloc = f"[{host}]" if ":" in host else host
    try:
        netguard.check_url_blocking(f"http://{netloc}/", allowance=policy.PRIVATE_HOSTS)
    except netguard.Unresolvable:
        return None
    except netguard.AddressRefused as exc:
        return f"{entry}: {exc}"
    return None


def publish_problems(config: BrowserConfig) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for index, entry in enumerate(config.allowed_domains or []):
        reason = _private_domain(entry)
        if reason:
            problems.append((f"allowed_domains.{index}", reason))
    return problems + service_problems(config)


def service_problems(config: BrowserConfig) -> list[tuple[str, str]]:
    """The browser service's checks, which a browse also makes when it starts (`session.service_refusal`)."""
    problems: list[tuple[str, str]] = []
    if config.connection == "hosted":
        reason = _internal(config.hosted_url)
        if reason:
            problems.append(("hosted_url", reason))
        return problems
    address = cdp_address(config)
    if not address:
        problems.append(("cdp_url", "This deployment runs no browser service of its own: name one (a Chromium "
                                    "DevTools endpoint such as http://browser:9222), or ask the operator."))
    elif urlsplit(address).scheme not in ("http", "https", "ws", "wss"):
        problems.append(("cdp_url", "A DevTools endpoint is http(s):// or ws(s)://."))
    elif not cdp_host_allowed(address):
        problems.append(("cdp_url", "This browser service is not one the operator allows: its host must be in "
                                    "BROWSER_CDP_ALLOWED_HOSTS (empty refuses every browser)."))
    if config.connection == "proxy":
        reason = _internal(config.proxy_url)
        if reason:
            problems.append(("proxy_url", reason))
    return problems


def organization_problems(config: BrowserConfig, organization: Any) -> list[tuple[str, str]]:
    if not config.step_model_profile_id:
        return []
    from agenticos.tenancy import parse_uuid
    from agents.models import ModelProfile

    pk = parse_uuid(config.step_model_profile_id)
    exists = pk is not None and ModelProfile.objects.filter(
        pk=pk, organization=organization, kind=ModelProfile.Kind.CHAT).exists()
    return [] if exists else [("step_model_profile_id", "No such chat model profile in this organization.")]


def step_model_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    """A browse_web whose step model can never choose a step is refused at publish: it would spend every one of its
    `max_steps` requests on answers that are not steps. The step model is the binding's `step_model_profile_id`,
    else the agent's own. Two kinds can never choose one: the demo model (canned text, never a `step` call) and a
    model pydantic-ai's profile says takes no tools (`supports_tools` false — an image model such as
    google/gemini-2.5-flash-image through OpenRouter): a step is a tool call."""
    from agenticos.tenancy import parse_uuid
    from agents.models import ModelProfile
    from agents.providers import Provider, model_features
    from capabilities.model_support import binding_on_model

    bound = binding_on_model(actor, data, "browser_use", BrowserConfig)
    if bound is None:
        return []
    config: BrowserConfig = bound.config
    if config.step_model_profile_id:
        profile_id, whose = config.step_model_profile_id, "The step model"
    else:
        profile_id, whose = str(data.get("model_profile_id")), "The agent's model, which browse_web asks at each step,"
    pk = parse_uuid(profile_id)
    profile = None if pk is None else ModelProfile.objects.filter(organization=actor.organization, pk=pk).first()
    if profile is None:
        return []  # a missing profile is refused as a reference by the other checks
    if profile.provider == Provider.DEMO:
        why = "is the demo model: it answers with canned text and cannot choose a browser step"
    else:
        model = model_features(profile)
        if model is None or model.profile.get("supports_tools", True):
            return []  # a profile that cannot be built is refused where the profile is checked
        why = f"({profile.model}) is a model that takes no tools, so it cannot choose a browser step"
    return [{"field": f"{format_path(('capabilities', bound.index), data)}.config.step_model_profile_id",
             "message": f"{whose} “{profile.label}” {why}, so browse_web would spend all {config.max_steps} "
                        "steps. Choose a chat model that calls tools as the step model."}]
