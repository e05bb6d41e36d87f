"""Agent state changes: model profiles, agents and drafts, publish, environments, diff, YAML.

Every function that acts for someone takes keyword-only `actor=`, checks access through
`governance.grants.require_agent_access`, runs in one transaction and writes its audit row there.

Reads the runner needs:
- `environment_version(agent, "production")` → the AgentVersion an environment points at (or None);
- `version_for(actor=..., agent=..., environment="production" | version=<number>)` → same, access-checked.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify
from pydantic import ValidationError

from agenticos import audit
from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.models import Secret
from agenticos.queries import Loaded, load_row
from agenticos.strings import digits_only
from agenticos.tenancy import org_get, parse_uuid
from agents import extensions, yaml_io
from agents.diff import diff_specs
from agents.models import (
    PROVIDERS_NEEDING_BASE_URL,
    PROVIDERS_NEEDING_KEY,
    Agent,
    AgentVersion,
    Environment,
    ModelProfile,
    Provider,
    Rollout,
    Visibility,
)
from agents.spec import AgentSpec, dump_spec
from capabilities.custom_tools.budget import slot_problems
from capabilities.spec_checks import (
    PRODUCTION,
    Problem,
    as_uuid,
    problem,
    publish_problems,
    reference_problems,
    structural_problems,
    uuids,
)
from governance.grants import EDIT, PUBLISH, USE, VIEW, drop_grants_for_agent, require_agent_access

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

DEV = "dev"
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ENV_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")

def _invalid(message: str, problems: list[Problem]) -> Invalid:
    return Invalid(message, details={"problems": problems})


def _record(actor: Actor, action: str, target=None, **kwargs) -> None:
    details = kwargs.pop("details", None) or {}
    if actor.api_key is not None:
        details = {**details, "api_key": actor.api_key.prefix}
    audit.record(
        actor=actor.user,
        organization=actor.organization,
        action=action,
        target=target,
        details=details,
        ip_address=actor.extra.get("ip"),
        **kwargs,
    )


# ------------------------------------------------------------------ model profiles

PROFILE_FIELDS = ("label", "kind", "provider", "model", "secret_id", "base_url", "context_window", "settings",
                  "fallback_ids")


def _profile_problems(actor: Actor, data: dict[str, Any], profile: ModelProfile | None) -> list[Problem]:
    problems: list[Problem] = []
    label = (data.get("label") or "").strip()
    if not label:
        problems.append(problem("label", "This field is required."))
    if data.get("kind") not in ModelProfile.Kind.values:
        problems.append(problem("kind", f"Must be one of {list(ModelProfile.Kind.values)}."))
    provider = data.get("provider")
    if provider not in Provider.values:
        problems.append(problem("provider", f"Must be one of {list(Provider.values)}."))
    elif data.get("kind") == ModelProfile.Kind.REALTIME and provider != "openai":
        # calls.realtime speaks OpenAI's Realtime API only.
        problems.append(problem("provider", "A realtime voice model is OpenAI's (the Realtime API)."))
    if not (data.get("model") or "").strip():
        problems.append(problem("model", "This field is required."))
    secret_id = data.get("secret_id")
    if secret_id:
        if not Secret.objects.filter(organization=actor.organization, pk__in=uuids([secret_id])).exists():
            problems.append(problem("secret_id", "No such secret in this organization."))
        elif not actor.has("secrets:view"):
            problems.append(problem("secret_id", "Your role cannot use secrets."))
    elif provider in PROVIDERS_NEEDING_KEY:
        problems.append(problem("secret_id", f"The {provider} provider needs an API key secret."))
    base_url = data.get("base_url") or ""
    if base_url:
        try:
            URLValidator(schemes=["http", "https"])(base_url)
        except DjangoValidationError:
            problems.append(problem("base_url", "Enter a valid http(s) URL."))
        else:
            problems.extend(_base_url_problems(actor, base_url))
    elif provider in PROVIDERS_NEEDING_BASE_URL:
        problems.append(problem("base_url", f"The {provider} provider needs a base URL."))
    context_window = data.get("context_window")
    if context_window is not None and (not isinstance(context_window, int) or not 0 < context_window <= 2**31 - 1):
        problems.append(problem("context_window", "Must be a positive integer (at most 2147483647)."))
    if not isinstance(data.get("settings") or {}, dict):
        problems.append(problem("settings", "Must be an object."))
    fallback_ids = data.get("fallback_ids") or []
    wanted = set(uuids(fallback_ids))
    if len(wanted) != len(set(map(str, fallback_ids))) or (profile is not None and profile.pk in wanted):
        problems.append(problem("fallback_ids", "A fallback must be another model profile."))
    elif len(wanted) != ModelProfile.objects.filter(organization=actor.organization, pk__in=wanted).count():
        problems.append(problem("fallback_ids", "No such model profile in this organization."))
    return problems


def _base_url_problems(actor: Actor, base_url: str) -> list[Problem]:
    """The outbound guard's verdict on a profile's base URL (the provider client applies it again on every
    request, so a name that resolves elsewhere later is still refused); with the setting to change for those
    who may read the deployment's settings."""
    from agenticos import netguard
    from agenticos.tenancy import sees_deployment_settings

    try:
        netguard.check_url_blocking(base_url, allowance=netguard.MODEL_HOSTS)
    except netguard.Refused as exc:
        return [problem("base_url", netguard.operator_text(exc) if sees_deployment_settings(actor) else str(exc))]
    return []


def _save_profile(actor: Actor, profile: ModelProfile, data: dict[str, Any], action: str) -> ModelProfile:
    profile.label = data["label"].strip()
    profile.kind = data["kind"]
    profile.provider = data["provider"]
    profile.model = data["model"].strip()
    profile.secret_id = as_uuid(data["secret_id"]) if data.get("secret_id") else None
    profile.base_url = data.get("base_url") or ""
    profile.context_window = data.get("context_window")
    profile.settings = data.get("settings") or {}
    try:
        with transaction.atomic():
            profile.save()
            profile.fallbacks.set(list(ModelProfile.objects.filter(
                organization=actor.organization, pk__in=uuids(data.get("fallback_ids"))
            )))
            _record(actor, action, target=profile, target_name=profile.label,
                    details={"provider": profile.provider, "model": profile.model})
    except IntegrityError:
        raise Conflict("A model profile with this label already exists.", details={"field": "label"}) from None
    return profile


def create_model_profile(
    *,
    actor: Actor,
    label: str,
    provider: str,
    model: str,
    kind: str = ModelProfile.Kind.CHAT,
    secret_id: Any = None,
    base_url: str = "",
    context_window: int | None = None,
    settings: dict | None = None,
    fallback_ids: list | None = None,
) -> ModelProfile:
    actor.require("models:manage")
    data = {
        "label": label, "kind": kind, "provider": provider, "model": model, "secret_id": secret_id,
        "base_url": base_url, "context_window": context_window, "settings": settings or {},
        "fallback_ids": fallback_ids or [],
    }
    problems = _profile_problems(actor, data, None)
    if problems:
        raise _invalid("The model profile is invalid.", problems)
    return _save_profile(actor, ModelProfile(organization=actor.organization), data, "model_profile.created")


def seal_profile_key(*, actor: Actor, label: str, value: str) -> Any:
    """The API key typed in a model profile's form, sealed in the vault as an organization secret named after
    the profile (a number added when the name is taken). Needs models:manage, what the form needs: it makes only
    the key this profile will use, listed in Settings → Secrets like any other (never shown again)."""
    from agenticos.models import Secret, SecretKind
    from agenticos.services import seal_secret

    actor.require("models:manage")
    value = (value or "").strip()
    if not value:
        raise _invalid("The key is empty.", [problem("api_key", "Type the key, or choose one from the vault.")])
    base = f"{(label or 'Model').strip()[:100]} key"
    taken = set(Secret.objects.filter(organization=actor.organization, name__startswith=base)
                .values_list("name", flat=True))
    name = next(n for n in (base, *(f"{base} ({i})" for i in range(2, 1000))) if n not in taken)
    return seal_secret(actor=actor, name=name, value=value, kind=SecretKind.API_KEY,
                       description="Typed in the model profile form.")


def update_model_profile(*, actor: Actor, profile: ModelProfile, **changes: Any) -> ModelProfile:
    actor.require("models:manage")
    if profile.organization_id != actor.organization.pk:
        raise NotFound("Model profile not found.")
    unknown = [k for k in changes if k not in PROFILE_FIELDS]
    if unknown:
        raise _invalid("Unknown fields.", [problem(k, "Unknown field.") for k in unknown])
    data = {
        "label": profile.label, "kind": profile.kind, "provider": profile.provider, "model": profile.model,
        "secret_id": str(profile.secret_id) if profile.secret_id else None, "base_url": profile.base_url,
        "context_window": profile.context_window, "settings": profile.settings,
        "fallback_ids": [str(pk) for pk in profile.fallbacks.values_list("pk", flat=True)],
    }
    data.update(changes)
    problems = _profile_problems(actor, data, profile)
    if problems:
        raise _invalid("The model profile is invalid.", problems)
    return _save_profile(actor, profile, data, "model_profile.updated")


def delete_model_profile(*, actor: Actor, profile: ModelProfile) -> None:
    actor.require("models:manage")
    if profile.organization_id != actor.organization.pk:
        raise NotFound("Model profile not found.")
    pid = str(profile.pk)
    in_use = Agent.objects.filter(organization=actor.organization, draft_spec__model_profile_id=pid).exists() or (
        AgentVersion.objects.filter(agent__organization=actor.organization, spec__model_profile_id=pid).exists()
    )
    if in_use:
        raise Conflict("Agents use this model profile; point them elsewhere first.", code="in_use",
                       details={"field": "model_profile_id"})
    with transaction.atomic():
        _record(actor, "model_profile.deleted", target=profile, target_name=profile.label)
        profile.delete()


# ------------------------------------------------------------------ agents


def _check_slug(slug: str) -> list[Problem]:
    if not slug or len(slug) > 80 or not SLUG_RE.match(slug):
        return [problem("slug", "Use lowercase letters, digits and single hyphens (at most 80).")]
    return []


def _unique_slug(actor: Actor, name: str) -> str:
    base = slugify(name)[:70].strip("-") or "agent"
    slug, n = base, 1
    while Agent.objects.filter(organization=actor.organization, slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _duplicate_slug() -> Conflict:
    return Conflict("An agent with this slug already exists.", details={"field": "slug"}, code="duplicate")


def create_agent(
    *,
    actor: Actor,
    name: str | None = None,
    slug: str | None = None,
    visibility: str = Visibility.ORGANIZATION,
    spec: dict[str, Any] | None = None,
) -> Agent:
    """A new agent with a draft spec (structurally valid; references are checked at publish)."""
    actor.require("agents:edit")
    data = dict(spec or {})
    name = (name or data.get("name") or "").strip()
    data["name"] = name
    parsed, problems = structural_problems(data)
    # Assigning tools is where the 25-slot budget binds: a new draft too, not only a saved or published one.
    problems += [{**p, "field": f"spec.{p['field']}"} for p in slot_problems(data, actor.organization.pk)]
    if slug is not None:
        problems += _check_slug(slug)
    if visibility not in Visibility.values:
        problems.append(problem("visibility", f"Must be one of {list(Visibility.values)}."))
    if problems or parsed is None:
        raise _invalid("The agent is invalid.", problems)
    slug = slug or _unique_slug(actor, name)
    if Agent.objects.filter(organization=actor.organization, slug=slug).exists():
        raise _duplicate_slug()
    try:
        with transaction.atomic():
            agent = Agent.objects.create(
                organization=actor.organization,
                slug=slug,
                name=parsed.name,
                owner=actor.user,
                visibility=visibility,
                draft_spec=dump_spec(parsed),
            )
            _record(actor, "agent.created", target=agent, details={"slug": slug})
    except IntegrityError:
        raise _duplicate_slug() from None
    return agent


def update_agent(
    *,
    actor: Actor,
    agent: Agent,
    name: str | None = None,
    slug: str | None = None,
    visibility: str | None = None,
    spec: dict[str, Any] | None = None,
) -> Agent:
    """Edit the draft (edit access); renaming the slug or changing visibility needs publish access."""
    require_agent_access(actor, agent, PUBLISH if (slug is not None or visibility is not None) else EDIT)
    problems: list[Problem] = []
    data = dict(spec) if spec is not None else dict(agent.draft_spec or {})
    if name is not None:
        data["name"] = name.strip()
    parsed, spec_problems = structural_problems(data)
    problems += [{**p, "field": f"spec.{p['field']}" if spec is not None else p["field"]} for p in spec_problems]
    if spec is not None:
        # Assigning tools is where the 25-slot budget binds, not only at publish.
        problems += [{**p, "field": f"spec.{p['field']}"} for p in slot_problems(data, actor.organization.pk)]
    if slug is not None:
        problems += _check_slug(slug)
    if visibility is not None and visibility not in Visibility.values:
        problems.append(problem("visibility", f"Must be one of {list(Visibility.values)}."))
    if problems or parsed is None:
        raise _invalid("The agent is invalid.", problems)
    if slug is not None and slug != agent.slug and Agent.objects.filter(
        organization=actor.organization, slug=slug
    ).exists():
        raise _duplicate_slug()
    before = {"name": agent.name, "slug": agent.slug, "visibility": agent.visibility}
    agent.draft_spec = dump_spec(parsed)
    agent.name = parsed.name
    agent.slug = slug or agent.slug
    agent.visibility = visibility or agent.visibility
    agent.updated_at = timezone.now()
    after = {"name": agent.name, "slug": agent.slug, "visibility": agent.visibility}
    try:
        with transaction.atomic():
            agent.save(update_fields=["draft_spec", "name", "slug", "visibility", "updated_at"])
            _record(actor, "agent.updated", target=agent, details={
                "changed": sorted(k for k in after if after[k] != before[k]) + (["spec"] if spec is not None else []),
            })
    except IntegrityError:
        raise _duplicate_slug() from None
    return agent


def delete_agent(*, actor: Actor, agent: Agent) -> None:
    require_agent_access(actor, agent, PUBLISH)
    with transaction.atomic():
        _record(actor, "agent.deleted", target=agent, details={"slug": agent.slug})
        drop_grants_for_agent(agent)
        # Environments and rollouts point at versions with PROTECT; remove them before the versions go (a rollout
        # is the agent's own history: it goes with it).
        Environment.objects.filter(agent=agent).delete()
        Rollout.objects.filter(agent=agent).delete()
        try:
            agent.delete()
        except models.ProtectedError:
            raise Conflict("This agent has runs; it cannot be deleted.", code="in_use") from None


# ------------------------------------------------------------------ publish and environments


def publish_agent(*, actor: Actor, agent: Agent, note: str = "", allow_unchanged: bool = True) -> AgentVersion:
    """Freeze the draft into version N+1. The first publish creates `production` on it; `dev` (and any
    environment with tracks_latest) follows every publish. Raises Invalid listing every problem.
    allow_unchanged=False (the API and the console) refuses a draft equal to the latest version with Conflict
    `unchanged` ("Nothing changed since vN."), so a person's publish never makes an empty version."""
    require_agent_access(actor, agent, PUBLISH)
    if not allow_unchanged:  # before the gate: no suite is run for a publish that is refused
        _refuse_unchanged(agent, agent.draft_spec)
    # The gates the layers above register (agents.extensions): an agent whose evaluation suite gates publishing
    # is published only when the suite passes on the draft.
    extensions.check_publish_gates(actor=actor, agent=agent)
    with transaction.atomic():
        agent = Agent.objects.select_for_update().get(pk=agent.pk)
        problems = publish_problems(actor, agent.draft_spec, agent=agent)
        if problems:
            raise _invalid("The agent cannot be published.", problems)
        if not allow_unchanged:  # again under the lock: two publishes of one draft make one version
            _refuse_unchanged(agent, agent.draft_spec)
        spec = dump_spec(AgentSpec.model_validate(agent.draft_spec))
        number = (agent.versions.aggregate(n=Max("number"))["n"] or 0) + 1
        version = AgentVersion.objects.create(
            agent=agent, number=number, spec=spec, note=(note or "")[:500], published_by=actor.user
        )
        now = timezone.now()
        Environment.objects.get_or_create(agent=agent, name=PRODUCTION, defaults={"version": version})
        Environment.objects.get_or_create(agent=agent, name=DEV, defaults={"version": version, "tracks_latest": True})
        moved = list(
            Environment.objects.filter(agent=agent, tracks_latest=True).exclude(version=version)
            .values_list("name", flat=True)
        )
        Environment.objects.filter(agent=agent, tracks_latest=True).update(version=version, updated_at=now)
        _record(actor, "agent.published", target=agent, details={
            "version": number, "version_id": str(version.pk), "note": version.note, "moved": moved,
        })
        if _shares_workspace_across_people(spec):
            # Scope agent crosses a boundary between people: whoever finds a file they never made can look up why.
            _record(actor, "agent.workspace_shared", target=agent, details={"version": number, "scope": "agent"})
    return version


def _refuse_unchanged(agent: Agent, draft: dict[str, Any] | None) -> dict[str, Any] | None:
    """The draft as it would be frozen; Conflict (409 `unchanged`) when it equals the latest version's spec, so
    a publish with no change never creates an empty version. None for a draft that does not parse (its
    publish problems say why)."""
    try:
        spec = dump_spec(AgentSpec.model_validate(draft or {}))
    except ValidationError:
        return None
    latest = agent.versions.filter(number__gt=0).order_by("-number").only("number", "spec").first()
    if latest is not None and latest.spec == spec:
        raise Conflict(f"Nothing changed since v{latest.number}.", code="unchanged",
                       details={"version": latest.number})
    return spec


def _shares_workspace_across_people(spec: dict[str, Any]) -> bool:
    return any(
        b.get("id") == "sandbox" and b.get("enabled", True) is not False
        and (b.get("config") or {}).get("session_scope") == "agent"
        for b in spec.get("capabilities") or []
    )


def published_version(agent: Agent, number: Any) -> AgentVersion:
    """The agent's published version `number` (never a draft snapshot), or NotFound."""
    return _version(agent, number)


def _version(agent: Agent, number: Any) -> AgentVersion:
    try:
        # Number 0 names the draft's evaluation snapshots (evals), never a published version.
        return AgentVersion.objects.get(agent=agent, number=int(number), number__gt=0)
    except (AgentVersion.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"Version {number} not found.") from None


def promote_environment(*, actor: Actor, agent: Agent, environment: str, version: int) -> Environment:
    """Point an environment at a version (an older one = rollback). Creates the environment if new.
    The versions themselves never change, so the history stays."""
    require_agent_access(actor, agent, PUBLISH)
    if not ENV_NAME_RE.match(environment or ""):
        raise _invalid("Invalid environment name.", [problem("environment", "Lowercase letters, digits, - and _.")])
    target = _version(agent, version)
    with transaction.atomic():
        env = Environment.objects.select_for_update().filter(agent=agent, name=environment).first()
        before = None
        if env is None:
            env = Environment.objects.create(agent=agent, name=environment, version=target)
        else:
            before = AgentVersion.objects.filter(pk=env.version_id).values_list("number", flat=True).first()
            env.version = target
            env.updated_at = timezone.now()
            env.save(update_fields=["version", "updated_at"])
        action = "agent.rolled_back" if before is not None and target.number < before else "agent.promoted"
        _record(actor, action, target=agent,
                details={"environment": environment, "from_version": before, "to_version": target.number})
    return env


def environment_version(agent: Agent, name: str = PRODUCTION) -> AgentVersion | None:
    """The version an environment points at, or None when it does not exist (agent never published)."""
    try:
        return Environment.objects.select_related("version").get(agent=agent, name=name).version
    except Environment.DoesNotExist:
        return None


def version_for(
    *, actor: Actor, agent: Agent, environment: str | None = PRODUCTION, version: int | None = None,
    level: str = USE,
) -> AgentVersion:
    """The version to run: a number if given, else the environment's. Checks `level` access first."""
    require_agent_access(actor, agent, level)
    if version is not None:
        return _version(agent, version)
    found = environment_version(agent, environment or PRODUCTION)
    if found is None:
        raise NotFound(f"The agent has no {environment} environment; publish it first.")
    return found


def agent_and_version(*, actor: Actor, agent_id: Any, environment: str | None = PRODUCTION,
                      level: str = USE) -> tuple[Agent, AgentVersion]:
    """The actor's agent and the version its environment points at, access-checked — in one read when the
    environment exists (every turn of every chat asks this). Otherwise the same answers as `org_get` +
    `version_for`: not found, not allowed, or not published."""
    agent, version, _rollout_id = agent_version_and_rollout(actor=actor, agent_id=agent_id, environment=environment,
                                                            level=level)
    return agent, version


def agent_version_and_rollout(*, actor: Actor, agent_id: Any, environment: str | None = PRODUCTION,
                              level: str = USE) -> tuple[Agent, AgentVersion, Any]:
    """`agent_and_version` and the environment's rollout id (None without one), from the same read: what a
    member surface hands to `agents.rollouts.route`."""
    wanted = parse_uuid(agent_id)
    row = None
    if wanted is not None:
        with connection.cursor() as cursor:
            cursor.execute(_agent_and_version_sql(), [wanted, actor.organization.pk, environment or PRODUCTION])
            row = cursor.fetchone()
    if row is None:
        agent = org_get(actor, Agent, agent_id)
        require_agent_access(actor, agent, level)
        env = Environment.objects.select_related("version").filter(agent=agent, name=environment or PRODUCTION).first()
        if env is None:
            raise NotFound(f"The agent has no {environment} environment; publish it first.")
        return agent, env.version, env.rollout_id
    loaded_agent, loaded_version = load_row(row[:-1], AGENT_AND_VERSION_LAYOUT)
    require_agent_access(actor, cast(Agent, loaded_agent), level)
    return cast(Agent, loaded_agent), cast(AgentVersion, loaded_version), row[-1]


# The specs are not read here (a run reads its version's when it starts): not parsed on every turn. Hand-written
# from the models' fields (`load_row`): the ORM's compilation of this join cost more than PostgreSQL's work.
AGENT_AND_VERSION_LAYOUT = (Loaded(Agent, "a", exclude=("draft_spec",)), Loaded(AgentVersion, "v", exclude=("spec",)))


@lru_cache(maxsize=1)
def _agent_and_version_sql() -> str:
    quote = connection.ops.quote_name
    agents, versions = (quote(part.model._meta.db_table) for part in AGENT_AND_VERSION_LAYOUT)
    environments = quote(Environment._meta.db_table)
    columns = ", ".join(part.columns(quote) for part in AGENT_AND_VERSION_LAYOUT)
    # Table and column names come from the models; every value is a parameter.
    return (
        f"SELECT {columns}, e.rollout_id FROM {environments} e JOIN {agents} a ON a.id = e.agent_id"  # noqa: S608
        f" JOIN {versions} v ON v.id = e.version_id WHERE e.agent_id = %s AND a.organization_id = %s AND e.name = %s"
    )


# ------------------------------------------------------------------ diff and YAML


def _spec_ref(agent: Agent, ref: Any) -> tuple[str, dict]:
    """"draft", a version number, or an environment name → (label, spec dict)."""
    ref = str(ref or "").strip()
    if ref == "draft":
        return "draft", agent.draft_spec
    if digits_only(ref):
        v = _version(agent, ref)
        return f"v{v.number}", v.spec
    found = environment_version(agent, ref) if ENV_NAME_RE.match(ref) else None
    if found is None:
        raise NotFound(f"Unknown version {ref!r}: use a number, 'draft' or an environment name.")
    return f"v{found.number}", found.spec


def _normalized(spec: dict) -> dict:
    # Old versions lack newer fields; compare through the current schema so defaults are not "changes".
    parsed, _ = structural_problems(spec)
    return dump_spec(parsed) if parsed is not None else spec


def diff_versions(*, actor: Actor, agent: Agent, from_ref: Any, to_ref: Any) -> dict:
    require_agent_access(actor, agent, VIEW)
    from_label, before = _spec_ref(agent, from_ref)
    to_label, after = _spec_ref(agent, to_ref)
    result = diff_specs(_normalized(before), _normalized(after), from_label=from_label, to_label=to_label)
    return {"from": from_label, "to": to_label, **result}


def export_agent_yaml(*, actor: Actor, agent: Agent, version: int | None = None) -> str:
    """The draft (or a version) as YAML. References by id; never a secret value (specs hold none)."""
    require_agent_access(actor, agent, VIEW)
    if version is None:
        return yaml_io.dump_agent_yaml(slug=agent.slug, visibility=agent.visibility, spec=agent.draft_spec)
    v = _version(agent, version)
    return yaml_io.dump_agent_yaml(slug=agent.slug, visibility=agent.visibility, spec=v.spec, version=v.number)


def import_agent_yaml(*, actor: Actor, text: str, agent: Agent | None = None) -> Agent:
    """Create an agent from YAML, or replace `agent`'s draft with it. Refuses unknown fields and
    dangling references (model profile, secrets, collections, …), naming every one."""
    doc = yaml_io.parse_agent_yaml(text)
    spec_data = doc["spec"]
    _, problems = structural_problems(spec_data)
    problems = [{**p, "field": f"spec.{p['field']}"} for p in problems]
    problems += [
        {**p, "field": f"spec.{p['field']}"}
        for p in reference_problems(actor, spec_data, agent=agent, require_model=False)
    ]
    if problems:
        raise _invalid("The YAML document cannot be imported.", problems)
    if agent is not None:
        return update_agent(actor=actor, agent=agent, spec=spec_data)
    return create_agent(
        actor=actor,
        slug=doc.get("slug") or None,
        visibility=doc.get("visibility") or Visibility.ORGANIZATION,
        spec=spec_data,
    )


def reject_foreign(actor: Actor, agent: Agent) -> None:
    """Defensive check for callers that loaded an agent outside the tenant helpers."""
    if agent.organization_id != actor.organization.pk:
        raise NotFound("Agent not found.")



def set_avatar(*, actor: Actor, agent: Agent, data: bytes | None) -> Agent:
    """The agent's picture (edit access): PNG/JPEG/WebP/GIF by sniffed type, ≤ 2 MB; None removes it."""
    from agenticos import images

    require_agent_access(actor, agent, EDIT)
    with transaction.atomic():
        path = images.replace(agent, "avatar_path", data, lambda ext: f"agents/{agent.pk}/avatar.{ext}",
                              what="avatar")
        _record(actor, "agent.avatar_set" if path else "agent.avatar_removed", target=agent,
                details={"bytes": len(data)} if data is not None else {})
    return agent
