"""One settings module, driven by environment variables (django-environ).

Safe defaults for a fresh machine; a bad value raises ImproperlyConfigured with a readable message.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import environ
from csp import constants as csp_constants
from django.core.exceptions import ImproperlyConfigured

from config import devservices

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _bool(name: str, default: bool) -> bool:
    raw = env.str(name, default=str(default)).strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use true or false.")


def _int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = env.str(name, default=str(default))
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def _decimal_or_none(name: str, default: str) -> Decimal | None:
    raw = env.str(name, default=default).strip()
    if raw == "":
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number (leave it empty for no cap).") from exc
    if value < 0:
        raise ImproperlyConfigured(f"{name} cannot be negative.")
    return value


DATA_DIR = devservices.data_dir()
DEBUG = _bool("DEBUG", True)
TESTING = _bool("AGENTICOS_TESTING", False)
# A process `make run` started (config.launcher sets it): one machine hosting itself, DEBUG off unless a developer
# asked for it (`make dev`). Its keys stay in the data dir as in development, daphne listens on loopback over plain
# http, and the machine's own names are its hosts (ALLOWED_HOSTS, the cookies below).
LAUNCHED = _bool("AGENTICOS_LAUNCHER", False)


def _host_list(name: str, default: list[str] | None = None) -> list[str]:
    """An operator's allowance of private hosts: names, addresses, networks, each optionally with `:port`."""
    from agenticos import hostports  # no Django inside: safe to import while settings load

    try:
        return hostports.parse_all(env.list(name, default=default or []), name)
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None


def _generated_secret(name: str, length: int) -> str:
    """In development and under `make run`, generated once into the data dir (`make run` and `make dev` share
    it: the vault opens under both); otherwise, with DEBUG=false, the variable is required."""
    value = env.str(name, default="")
    if value:
        return value
    if not DEBUG and not LAUNCHED:
        raise ImproperlyConfigured(f"{name} must be set when DEBUG=false.")
    path = DATA_DIR / name.lower()
    if not path.exists():
        path.write_text(secrets.token_urlsafe(length))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _generated_secret("SECRET_KEY", 50)
VAULT_MASTER_KEY = _generated_secret("VAULT_MASTER_KEY", 32)
VAULT_KEY_VERSION = _int("VAULT_KEY_VERSION", 1, minimum=1)


def _previous_vault_keys() -> dict[int, str]:
    """Older master keys by version, so rows sealed before a rotation still open: "1:oldkey,2:otherkey"."""
    keys: dict[int, str] = {}
    for item in env.list("VAULT_PREVIOUS_KEYS", default=[]):
        version, sep, key = item.partition(":")
        if not sep or not (version.strip().isascii() and version.strip().isdigit()) or not key:
            raise ImproperlyConfigured("VAULT_PREVIOUS_KEYS must look like '1:<old key>,2:<other key>'.")
        keys[int(version)] = key
    return keys


VAULT_PREVIOUS_KEYS = _previous_vault_keys()

if _bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
PORT = _int("PORT", 8000)
FRONTEND_URL = env.str("FRONTEND_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")


def _launched_hosts() -> list[str]:
    """The names a `make run` machine answers to: its loopback ones (daphne listens on 127.0.0.1) and
    FRONTEND_URL's host, the address a tunnel or a proxy in front of it gives."""
    hosts = ["localhost", "127.0.0.1", "[::1]"]
    frontend = urlsplit(FRONTEND_URL).hostname or ""
    if ":" in frontend:  # an IPv6 address: ALLOWED_HOSTS spells it in brackets
        frontend = f"[{frontend}]"
    if frontend and frontend not in hosts:
        hosts.append(frontend)
    return hosts


# Development answers to any name; production lists its own (docker-compose requires it).
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"] if DEBUG else _launched_hosts() if LAUNCHED else [])

INSTALLED_APPS = [
    # Not "daphne": its app only swaps `runserver` for an ASGI one and imports its server (twisted, autobahn: 0.24 s)
    # into every process that loads the apps — each Celery worker, each manage.py command. The web process is the
    # daphne command (config.launcher, docker-compose), which imports it anyway.
    # The web console (the top layer of the code) before django.contrib.admin: its registration/ templates (sign
    # in, password reset) override admin's, as the project's templates/ folder did.
    "console",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files (no CDN)
    "channels",
    "guardian",
    "django_celery_beat",
    "agenticos",
    "agents",
    "workspaces",  # an agent's files between turns and the sandbox services they run on
    "capabilities",
    "capabilities.artifacts.apps.ArtifactsConfig",  # published applications: own label, own migrations
    "capabilities.remote_agents",  # registrations of other providers' agents (A2A)
    "media",  # images, speech and video agents make (label generated_media)
    "governance",
    "knowledge",
    "embeds",
    "calls",
    "channelbots",
    "triggers",
    "evals",
    "notifications",
    "identity",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.saml",
    "allauth.mfa",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # the Content-Security-Policy (CONTENT_SECURITY_POLICY below)
    # Every /api/ response is the error envelope (whatever answered), NUL / oversize / too-deep input refused.
    "agenticos.middleware.ApiEdgeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "agenticos.middleware.ApiCommonMiddleware",  # CommonMiddleware without slash redirects under /api/
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "agenticos.tenancy.CurrentOrganizationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],  # every template lives in its app (the console's in console/templates)
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "agenticos.tenancy.organization_context",
            ],
        },
    },
]

# ------------------------------------------------------------------ data stores
_services = devservices.read_services_env(DATA_DIR)
DATABASE_URL = env.str("DATABASE_URL", default=_services.get("DATABASE_URL", ""))
REDIS_URL = env.str("REDIS_URL", default=_services.get("REDIS_URL", ""))


def _redis_db(url: str, db: int) -> str:
    if url.startswith("unix://"):
        return url.split("?")[0] + f"?db={db}"
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, ""))


# The namespace of every name this deployment gives in Redis: cache keys, rate-limit keys, pub/sub channels (which
# a database number does not separate), the channel layer's and the broker's keys. Two deployments — or two
# parallel test workers — on one Redis each need their own. The default one keeps the names of before.
_NAMESPACE_SET = env.str("REDIS_NAMESPACE", default="")
REDIS_NAMESPACE = _NAMESPACE_SET or "agenticos"
if not all(char.isascii() and (char.isalnum() or char in "._-") for char in REDIS_NAMESPACE):
    raise ImproperlyConfigured(f"REDIS_NAMESPACE={REDIS_NAMESPACE!r}: letters, digits, '.', '_' and '-' only.")
BROKER_REDIS_URL = REDIS_URL
_TEST_WORKER_SLOTS = 31  # the embedded test Redis has 64 databases: 1-31 counters, 33-63 brokers
if TESTING and env.str("PYTEST_XDIST_WORKER", default=""):
    # Parallel test workers (and helper sessions, one gwN each) never see each other: their own namespace
    # (so their own pub/sub channels), their own database for counters — flushed before each test — and
    # another for the Celery broker, so that flush never deletes queued tasks or kombu's bindings.
    _worker = env.str("PYTEST_XDIST_WORKER")
    _slot = int(_worker[2:]) if _worker.startswith("gw") and _worker[2:].isascii() and _worker[2:].isdigit() else _TEST_WORKER_SLOTS
    if _slot >= _TEST_WORKER_SLOTS:
        raise ImproperlyConfigured(
            f"PYTEST_XDIST_WORKER={_worker!r}: the test Redis has room for gw0…gw{_TEST_WORKER_SLOTS - 1} "
            "(two databases each); run fewer parallel workers."
        )
    if not _NAMESPACE_SET:
        REDIS_NAMESPACE = f"{REDIS_NAMESPACE}-{_worker}"
    REDIS_URL = _redis_db(REDIS_URL, 1 + _slot)
    BROKER_REDIS_URL = _redis_db(REDIS_URL, 1 + _slot + 32)
if not DATABASE_URL:
    raise ImproperlyConfigured(
        "DATABASE_URL is not set and the embedded PostgreSQL is not running: "
        "run `python -m config.devservices start` (make run does it) or set DATABASE_URL."
    )
if not REDIS_URL:
    raise ImproperlyConfigured(
        "REDIS_URL is not set and the embedded Redis is not running: "
        "run `python -m config.devservices start` (make run does it) or set REDIS_URL."
    )

try:
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
except Exception as exc:  # environ raises several kinds on a malformed URL
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
# libpq spells a unix socket directory as ?host=/path; Django wants it in HOST.
for _key in ("host", "port"):
    if _key in DATABASES["default"].get("OPTIONS", {}):
        DATABASES["default"][_key.upper()] = str(DATABASES["default"]["OPTIONS"].pop(_key))
# Connections come from a psycopg pool per process (DB_POOL_MAX_SIZE; 0 = a new connection per request):
# a new PostgreSQL connection is a forked backend, and every socket message and every run asked for one.
# Django returns a connection to the pool where it would have closed it.
# At least as many as a process has threads that use the ORM at once (a worker's task threads, the
# runner's RUN_DB_THREADS): a thread that finds the pool empty waits DB_POOL_TIMEOUT_SECONDS, then fails.
DB_POOL_MAX_SIZE = _int("DB_POOL_MAX_SIZE", 32, minimum=0)
DATABASES["default"]["CONN_MAX_AGE"] = 0
if DB_POOL_MAX_SIZE:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": _int("DB_POOL_TIMEOUT_SECONDS", 30, minimum=1),
    }
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# No server-side parameter binding (so no prepared statements): with it, Django hands psycopg an int for an
# integer column as a binary int4, and a value past its range arrives wrapped (2**31 → -2**31) where the
# client-side default makes PostgreSQL refuse it — a silent wrong answer instead of an error.
DATABASES["default"].setdefault("TEST", {})["NAME"] = env.str("TEST_DATABASE_NAME", default="test_agenticos")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _celery_redis_url(url: str) -> str:
    # kombu spells a unix socket "redis+socket://"; redis-py and channels-redis spell it "unix://".
    if url.startswith("unix://"):
        path, _, query = url[len("unix://") :].partition("?")
        db = dict(part.split("=", 1) for part in query.split("&") if "=" in part).get("db")
        return "redis+socket://" + quote(path, safe="/") + (f"?virtual_host={db}" if db else "")
    return url


CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": REDIS_NAMESPACE,
    }
}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "agenticos.channel_layer.RedisChannelLayer",  # channels-redis, group_send in fewer trips
        # redis-py 8 defaults socket_timeout to 5 s, the same as channels-redis' blocking pop: an idle
        # consumer would time out and close its socket with 1011. Give the pop room.
        # Every socket of one web process shares that process's inbox, and channels-redis drops
        # (silently) what exceeds `capacity`: 50 streaming sockets × ~150 word frames overflowed 1,500.
        "CONFIG": {
            # redis-py 8 caps an asyncio pool at 100 connections and raises past it (no waiting): 300 widget
            # sockets joining their groups at once closed 161 of them with 1011 (bench/concurrency.py
            # --via socket). Connections are returned after each command; the cap only bounds a burst.
            "hosts": [{"address": REDIS_URL, "socket_timeout": 30,
                       "max_connections": _int("CHANNEL_LAYER_MAX_CONNECTIONS", 2000, minimum=10)}],
            "prefix": "asgi" if REDIS_NAMESPACE == "agenticos" else f"{REDIS_NAMESPACE}:asgi",
            "capacity": _int("CHANNEL_LAYER_CAPACITY", 100_000, minimum=100),
            "expiry": 120,
        },
    }
}

CELERY_BROKER_URL = _celery_redis_url(BROKER_REDIS_URL)
CELERY_RESULT_BACKEND = _celery_redis_url(BROKER_REDIS_URL)
if REDIS_NAMESPACE != "agenticos":
    # kombu prefixes every key and its pub/sub (fanout: worker pings and control) channels with it.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": f"{REDIS_NAMESPACE}:"}
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": f"{REDIS_NAMESPACE}:"}
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "agents.tasks.execute_run": {"queue": "runs"},
    "knowledge.tasks.*": {"queue": "cpu"},
}
CELERY_TASK_ALWAYS_EAGER = _bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE = {
    # A lost worker's runs go on elsewhere within RUN_HEARTBEAT_STALE_SECONDS + this (agents/runner/recovery.py).
    "sweep-stale-runs": {"task": "agents.tasks.sweep_stale_runs", "schedule": 10.0},
    "expire-parked-runs": {"task": "agents.tasks.expire_parked", "schedule": 300.0},
    # The backstop of the rollouts' run-ended watcher (agents.rollouts): runs ended by a sweep are heard here.
    "watch-rollouts": {"task": "agents.tasks.watch_rollouts", "schedule": 300.0},
    "sweep-spilled-outputs": {"task": "capabilities.tasks.sweep_spilled_outputs", "schedule": 600.0},
    "sweep-turn-workspaces": {"task": "capabilities.tasks.sweep_turn_workspaces", "schedule": 600.0},
    # One dispatcher for every schedule trigger; a claim row per (trigger, due time) makes a second beat harmless.
    "dispatch-triggers": {"task": "triggers.tasks.dispatch_due_triggers", "schedule": 60.0},
    "retention-sweeps": {"task": "triggers.tasks.retention_sweeps", "schedule": 3600.0},
    # Suite runs whose driver's worker was lost end `error` (evals.driver.sweep_stale).
    "sweep-stale-suite-runs": {"task": "evals.tasks.sweep_stale_suite_runs", "schedule": 300.0},
    # Each organization's audit stream to its SIEM (identity.audit_stream): the backlog since the last acknowledgement.
    "flush-audit-streams": {"task": "identity.tasks.flush_audit_streams", "schedule": 15.0},
}

# ------------------------------------------------------------------ auth
AUTH_USER_MODEL = "agenticos.User"
AUTHENTICATION_BACKENDS = [
    "identity.backends.PasswordBackend",  # ModelBackend, refusing members of an organization that requires SSO
    "guardian.backends.ObjectPermissionBackend",
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Single sign-on (identity/): django-allauth's OpenID Connect, one provider per organization, read from the
# database (identity.adapter); allauth's own sign-up and account pages are not used.
ACCOUNT_ADAPTER = "identity.adapter.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "identity.adapter.SocialAccountAdapter"
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION = True  # ada@acme.com who had a password account signs in as herself
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True
SOCIALACCOUNT_STORE_TOKENS = False
SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"provider_class": "identity.oidc.OrganizationOIDCProvider"}}
# Two-factor for password sign-ins (identity.mfa): allauth's TOTP and recovery codes, passkeys (WebAuthn), secrets sealed in the vault.
MFA_ADAPTER = "identity.mfa.MfaAdapter"
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]  # webauthn: passkeys as a second factor
MFA_TOTP_ISSUER = "AgenticOS"
# Signing in with a passkey alone (identity.mfa.passkey_login_user; refused where an organization requires SSO).
MFA_PASSKEY_LOGIN_ENABLED = env.bool("MFA_PASSKEY_LOGIN_ENABLED", default=True)
# IdP hosts on internal addresses (a Keycloak inside the network) the outbound guard lets SSO reach.
SSO_ALLOWED_PRIVATE_HOSTS = _host_list("SSO_ALLOWED_PRIVATE_HOSTS")
# SIEM receivers of the audit stream that may sit on internal addresses (and speak plain http there).
AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS = _host_list("AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS")
# A PEM CA bundle to verify syslog+tls receivers with (an internal CA); empty: the public CAs.
AUDIT_STREAM_CA_BUNDLE = env.str("AUDIT_STREAM_CA_BUNDLE", default="")
# Resolvers for domain verification's TXT lookup ("host" or "host:port"); empty: the system's.
SSO_DNS_NAMESERVERS = env.list("SSO_DNS_NAMESERVERS", default=[])
GUARDIAN_RAISE_403 = False
ANONYMOUS_USER_NAME = None
# Production sends the session and CSRF cookies over https only. `make run` serves plain http on loopback: there a
# Secure cookie protects nothing (the traffic never leaves the machine) and breaks signing in wherever a Secure
# cookie is refused over http (Safari, curl, scripts); it is Secure again once FRONTEND_URL says https (TLS in front).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = not DEBUG and (not LAUNCHED or FRONTEND_URL.startswith("https://"))

EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="AgenticOS <noreply@localhost>")

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("es", "Español")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(DATA_DIR / "media")))
if env.str("AWS_STORAGE_BUCKET_NAME", default=""):
    STORAGES = {
        "default": {"BACKEND": "storages.backends.s3.S3Storage"},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    AWS_STORAGE_BUCKET_NAME = env.str("AWS_STORAGE_BUCKET_NAME")
    AWS_S3_ENDPOINT_URL = env.str("AWS_S3_ENDPOINT_URL", default=None)

# ------------------------------------------------------------------ API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "agenticos.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "agenticos.errors.exception_handler",
    # JSON in, JSON out: a view that takes uploads declares its multipart parser; a form-encoded body on
    # a JSON endpoint is a 415 that says so (it used to reach the services as a QueryDict and fail there).
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_METADATA_CLASS": "agenticos.middleware.ApiMetadata",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_PAGINATION_CLASS": "agenticos.pagination.Pagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "TITLE": "AgenticOS API",
    "DESCRIPTION": "Agents as data: build, publish and run agents on every surface.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "agenticos.errors.document_error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MemberRoleEnum": "agenticos.permissions.Role",
        "MessageRoleEnum": "agents.models.Message.Role",
        "SecretKindEnum": "agenticos.models.SecretKind",
        "ModelProfileKindEnum": "agents.models.ModelProfile.Kind",
        "RunStatusEnum": "agents.models.RunStatus",
        "ApprovalStatusEnum": "governance.models.Approval.Status",
        # Fields of the same name with other choices: each set named for what it is, never a hash suffix
        # (`Status230Enum`) that changes when a choice does and breaks a client generated from the schema.
        "VisibilityEnum": "agents.models.Visibility",
        "CollectionVisibilityEnum": "knowledge.models.Collection.Visibility",
        "ArtifactVisibilityEnum": "capabilities.artifacts.models.Artifact.Visibility",
        "SurfaceEnum": "agents.models.Surface",
        "RecordedSurfaceEnum": "evals.replays.RECORDED_SURFACES",
        "TriggerKindEnum": "triggers.models.Trigger.Kind",
        "GrantLevelEnum": "governance.grants.LEVELS",
        "SuiteRunStatusEnum": "evals.models.SuiteRun.Status",
        "ReplaySetStatusEnum": "evals.models.ReplaySet.Status",
        "ChannelBotTransportEnum": "channelbots.models.Transport",
        "McpTransportEnum": "capabilities.mcp.models.McpConnection.Transport",
    },
}

# ------------------------------------------------------------------ product limits
DEFAULT_ORG_MONTHLY_BUDGET_USD = _decimal_or_none("DEFAULT_ORG_MONTHLY_BUDGET_USD", "100")
# Only scopes a capability declares (tests/capabilities/test_scopes.py): web:browse gates browser_use;
# files:read, files:write and memory:write gated nothing.
DEFAULT_GRANTED_SCOPES = env.list(
    "DEFAULT_GRANTED_SCOPES",
    default=["knowledge:read", "conversations:read", "web:read", "web:fetch", "code:execute", "sandbox:execute",
             "agents:delegate", "web:browse"],
)
# How many specialists an agent with delegation may write for itself in one run (subagents, allow_dynamic).
MAX_DYNAMIC_SPECIALISTS = _int("MAX_DYNAMIC_SPECIALISTS", 5, minimum=0)
# Hosts (names, IPs/CIDRs, PostgreSQL socket dirs) that tools may reach although they are private.
TOOL_ALLOWED_PRIVATE_HOSTS = _host_list("TOOL_ALLOWED_PRIVATE_HOSTS")
# OAuth apps for the MCP catalog's services that offer no dynamic client registration (capabilities.mcp.catalog),
# a JSON object {"github": {"client_id": "...", "client_secret": "..."}}; each app's callback URL is
# https://<this console>/connections/catalog/callback. A service without one is listed as unavailable.
def _mcp_oauth_clients() -> dict[str, dict[str, str]]:
    import json

    raw = env.str("MCP_OAUTH_CLIENTS", default="").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ImproperlyConfigured("MCP_OAUTH_CLIENTS must be a JSON object.") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) and v.get("client_id") for v in value.values()):
        raise ImproperlyConfigured('MCP_OAUTH_CLIENTS must map a catalog key to {"client_id", "client_secret"}.')
    return value


MCP_OAUTH_CLIENTS = _mcp_oauth_clients()
# The same for model profiles' base URLs (a local Ollama or vLLM: `localhost`); kept apart from the tools' list
# because a profile sends its API key to that address.
# `make run` hosts one machine for its own people: there the usual ports of a local Ollama (11434) and LM Studio
# (1234) are allowed on loopback, and nothing else on it (the database, Redis, the sandbox service stay refused).
# Elsewhere the operator lists them; an entry with a port admits that port only (agenticos/hostports.py).
LOCAL_MODEL_SERVERS = [f"{host}:{port}" for port in (11434, 1234) for host in ("localhost", "127.0.0.1", "[::1]")]
MODEL_ALLOWED_PRIVATE_HOSTS = _host_list("MODEL_ALLOWED_PRIVATE_HOSTS", LOCAL_MODEL_SERVERS if LAUNCHED else [])
# And for channel bots' servers (a self-hosted Mattermost or Telegram Bot API server on the LAN): the bot's token
# goes there.
CHANNEL_ALLOWED_PRIVATE_HOSTS = _host_list("CHANNEL_ALLOWED_PRIVATE_HOSTS")
WEB_SEARCH_ENDPOINTS: dict[str, str] = {}
# mem0: self-hosted servers must be https and listed here (an empty list refuses self-hosted).
MEM0_ALLOWED_HOSTS = env.list("MEM0_ALLOWED_HOSTS", default=[])
MEM0_CA_BUNDLE = env.str("MEM0_CA_BUNDLE", default="")
# Dotted path of `(conversation, user_id) -> bool` confirming channel-thread membership (channelbots).
CHANNEL_MEMBERSHIP_CHECK = env.str("CHANNEL_MEMBERSHIP_CHECK", default="channelbots.selectors.is_participant")
# What one knowledge document may unpack to, and the passages it and its organization may hold (issue 37.7; the
# reasons for each default are in knowledge/parsers.py and knowledge/services.py, which read these at each parse).
KNOWLEDGE_MAX_EXPANDED_BYTES = _int("KNOWLEDGE_MAX_EXPANDED_BYTES", 200 * 1024 * 1024, minimum=1024)
KNOWLEDGE_MAX_ARCHIVE_MEMBERS = _int("KNOWLEDGE_MAX_ARCHIVE_MEMBERS", 10_000, minimum=1)
KNOWLEDGE_MAX_DOCUMENT_CHARS = _int("KNOWLEDGE_MAX_DOCUMENT_CHARS", 20_000_000, minimum=1000)
KNOWLEDGE_MAX_DOCUMENT_CHUNKS = _int("KNOWLEDGE_MAX_DOCUMENT_CHUNKS", 20_000, minimum=1)
KNOWLEDGE_MAX_ORGANIZATION_CHUNKS = _int("KNOWLEDGE_MAX_ORGANIZATION_CHUNKS", 1_000_000, minimum=1)
SKILLS_CACHE_DIR = env.str("SKILLS_CACHE_DIR", default=str(DATA_DIR / "skills-cache"))
# Capability sandbox, backend state: a workspace stored in this database refuses writes past this many bytes.
SANDBOX_STATE_MAX_BYTES = _int("SANDBOX_STATE_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
# Capability sandbox, backend service. The deployment's own sandboxd (`python -m sandboxd`, started by make run
# and compose) and its token file (`make sandbox-token`); an empty URL or a missing token = no own sandboxd.
SANDBOXD_URL = env.str("SANDBOXD_URL", default="http://127.0.0.1:8765")
SANDBOXD_TOKEN_FILE = env.str("SANDBOXD_TOKEN_FILE", default=str(DATA_DIR / "sandboxd.token"))
SANDBOXD_TOKEN = env.str("SANDBOXD_TOKEN", default="").strip()  # wins over the file (docker-compose passes it)
# run_python's jails, run by a root worker, start as RUN_PYTHON_UID_BASE + a number given once per organization
# (capabilities/code_execution/identity.py): a range of its own, apart from sandboxd's (SANDBOXD_UID_BASE) and
# far above the usual /etc/subuid ranges; an operator whose hosts use it sets another.
RUN_PYTHON_UID_BASE = _int("RUN_PYTHON_UID_BASE", 1_200_000_000, minimum=1000)
# Private hosts an operator-registered sandboxd connection may be on (the deployment's own is always allowed).
SANDBOX_ALLOWED_PRIVATE_HOSTS = _host_list("SANDBOX_ALLOWED_PRIVATE_HOSTS")
# What `execute` hands the model: at most this many characters of output; timeouts within 1..max seconds.
SANDBOX_EXECUTE_OUTPUT_CHARS = _int("SANDBOX_EXECUTE_OUTPUT_CHARS", 20_000, minimum=1000)
SANDBOX_EXECUTE_MAX_TIMEOUT = _int("SANDBOX_EXECUTE_MAX_TIMEOUT", 600, minimum=1)
# SCIM provisioning requests per minute per token (identity.scim); an initial sync of a large directory is paced
# by the IdP's retries on 429.
SCIM_RATE_LIMIT_PER_MINUTE = _int("SCIM_RATE_LIMIT_PER_MINUTE", 600, minimum=1)
RATE_LIMIT_RUN_PER_MINUTE = _int("RATE_LIMIT_RUN_PER_MINUTE", 30, minimum=1)
# Sign-in attempts per minute per address and per person, for each kind: password, second step, passkey, and
# passkey challenges (identity.attempts).
SIGNIN_ATTEMPTS_PER_MINUTE = _int("SIGNIN_ATTEMPTS_PER_MINUTE", 10, minimum=1)
RATE_LIMIT_EMBED_PER_MINUTE = _int("RATE_LIMIT_EMBED_PER_MINUTE", 30, minimum=1)
RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = _int("RATE_LIMIT_HOSTED_PAGE_PER_MINUTE", 120, minimum=1)
# A hosted page's config is counted per page above, its loads at /e/<key> per address (and visitor key); this is
# the whole page's ceiling of loads, far above normal traffic, spent only by requests their own counters let through
# (embeds/views.py `_page_limit`).
RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE = _int("RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE", 6000, minimum=1)
if RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE < RATE_LIMIT_HOSTED_PAGE_PER_MINUTE:
    raise ImproperlyConfigured(
        "RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE must be at least RATE_LIMIT_HOSTED_PAGE_PER_MINUTE: "
        "the page's ceiling is for everybody, the per-minute limit for one address."
    )
RATE_LIMIT_EMBED_UPLOAD_PER_MINUTE = _int("RATE_LIMIT_EMBED_UPLOAD_PER_MINUTE", 10, minimum=1)
CHAT_MAX_UPLOAD_SIZE_MB = _int("CHAT_MAX_UPLOAD_SIZE_MB", 10, minimum=1)
EMBED_MAX_UPLOAD_SIZE_MB = _int("EMBED_MAX_UPLOAD_SIZE_MB", 5, minimum=1)
# What of an attached file reaches the model: a document's text up to this many characters, an image
# itself up to this size.
ATTACHMENT_MAX_CHARS = _int("ATTACHMENT_MAX_CHARS", 50_000, minimum=1000)
ATTACHMENT_INLINE_IMAGE_MAX_MB = _int("ATTACHMENT_INLINE_IMAGE_MAX_MB", 5, minimum=1)
EMBED_SLOW_READER_SECONDS = _int("EMBED_SLOW_READER_SECONDS", 30, minimum=1)
EMBED_TURN_WATCHDOG_SECONDS = _int("EMBED_TURN_WATCHDOG_SECONDS", 5, minimum=1)
# Behind a proxy every visitor arrives as the proxy unless the first X-Forwarded-For hop is trusted.
EMBED_TRUST_X_FORWARDED_FOR = _bool("EMBED_TRUST_X_FORWARDED_FOR", False)
# How long a channel reply waits for a silent run before giving up (tests: short, so a worker can stop).
CHANNELBOTS_SILENCE_SECONDS = _int("CHANNELBOTS_SILENCE_SECONDS", 20 if TESTING else 1800, minimum=1)
# After this long without a frame, a channel reply asks the run row whether it has ended (frames can be lost).
CHANNELBOTS_WATCHDOG_SECONDS = _int("CHANNELBOTS_WATCHDOG_SECONDS", 5, minimum=1)
# How long a channel delivery's claim lasts until its run is started (then 15 minutes): a process that died in
# between lets the platform's redelivery through after this long instead of dropping it (channelbots/dedup.py).
CHANNELBOTS_CLAIM_PENDING_SECONDS = _int("CHANNELBOTS_CLAIM_PENDING_SECONDS", 120, minimum=1)
# A bot reply following its run is a task on its default worker's follows loop (channelbots/follows.py): at most
# CHANNELBOTS_MAX_FOLLOWS per process (beyond it the worker stops taking messages), their platform calls and ORM
# on CHANNELBOTS_FOLLOW_THREADS threads; a follow's lease (renewed by its loop) lapses after
# CHANNELBOTS_FOLLOW_LEASE_SECONDS when its worker died, and another default worker carries it on.
CHANNELBOTS_MAX_FOLLOWS = _int("CHANNELBOTS_MAX_FOLLOWS", 300, minimum=1)
CHANNELBOTS_FOLLOW_THREADS = _int("CHANNELBOTS_FOLLOW_THREADS", 16, minimum=1)
CHANNELBOTS_FOLLOW_LEASE_SECONDS = _int("CHANNELBOTS_FOLLOW_LEASE_SECONDS", 30, minimum=1)
# On SIGTERM a default worker lets its follows finish this long; the rest are left to another worker at once.
CHANNELBOTS_FOLLOW_SHUTDOWN_GRACE_SECONDS = _int("CHANNELBOTS_FOLLOW_SHUTDOWN_GRACE_SECONDS", 10, minimum=0)
RUN_STALE_AFTER = timedelta(seconds=_int("RUN_STALE_AFTER_SECONDS", 1800, minimum=60))
# Runs of a `runs` worker execute as asyncio tasks on one event loop per process (agents/runner/loop.py): at
# most RUN_MAX_CONCURRENT at once; beyond it the worker stops taking runs and the rest wait in the broker.
RUN_MAX_CONCURRENT = _int("RUN_MAX_CONCURRENT", 500, minimum=1)
# On SIGTERM a worker takes no new run and lets its runs finish this long; the rest are handed back to the queue
# from their last checkpoint, and the next worker goes on with them (agents/runner/recovery.py).
RUN_SHUTDOWN_GRACE_SECONDS = _int("RUN_SHUTDOWN_GRACE_SECONDS", 25, minimum=0)
# Every run's row gets a heartbeat this often (one statement per worker process for all its runs); the
# beat sweep (every 10 s) hands a run whose heartbeat is older than RUN_HEARTBEAT_STALE_SECONDS to another worker,
# which goes on from its checkpoint: a lost worker's runs resume within about 50 s. Keep it a few beats long.
RUN_HEARTBEAT_SECONDS = _int("RUN_HEARTBEAT_SECONDS", 10, minimum=1)
RUN_HEARTBEAT_STALE_AFTER = timedelta(seconds=_int("RUN_HEARTBEAT_STALE_SECONDS", 40, minimum=2))
# A run whose workers were lost this many times (a tool that exhausts memory…) ends `failed` ("worker lost").
RUN_MAX_RESUMES = _int("RUN_MAX_RESUMES", 3, minimum=0)
# PostgreSQL is the truth of what is queued: a queued run whose broker message was last sent longer ago than this
# (Redis flushed, restarted empty, or down when the run was queued) is sent again by the beat's sweep — once per
# this bound; the runs' claim makes a second message a no-op (agents.runner.finish.requeue_lost_runs).
RUN_REDELIVER_AFTER = timedelta(seconds=_int("RUN_REDELIVER_SECONDS", 120, minimum=10))
# Python's cyclic collector in the processes that serve runs (Celery workers, daphne): what they imported is frozen
# out of its sight and the young generation is collected every this many allocations instead of 700 — with
# hundreds of runs in flight the default thresholds cost a runs worker ~25 ms of CPU per run (agenticos/gc_tuning.py).
# Empty keeps CPython's defaults — the default under tests, whose one process imports daphne's application and sends
# worker_ready itself (tests/ops/test_gc_tuning.py sets it).
GC_THRESHOLDS = env.str("GC_THRESHOLDS", default="" if TESTING else "50000,20,10")
# The runs loop logs (and tests assert on) anything that keeps it from turning for this long.
# The runs loop runs on uvloop (libuv) when it is installed; RUN_LOOP_UVLOOP=false keeps asyncio's own loop.
RUN_LOOP_UVLOOP = env.bool("RUN_LOOP_UVLOOP", default=True)
RUN_LOOP_BLOCKED_SECONDS = float(_int("RUN_LOOP_BLOCKED_MS", 1000, minimum=10)) / 1000
APPROVAL_EXPIRY_HOURS = _int("APPROVAL_EXPIRY_HOURS", 72, minimum=1)
QUESTION_EXPIRY_HOURS = _int("QUESTION_EXPIRY_HOURS", 24, minimum=1)
MAX_MESSAGE_CHARS = _int("MAX_MESSAGE_CHARS", 32000, minimum=100)
WEB_HISTORY_TURNS = _int("WEB_HISTORY_TURNS", 100, minimum=1)
# Threads that do the runner's ORM work in each worker process (shared by all its runs).
RUN_DB_THREADS = _int("RUN_DB_THREADS", 16, minimum=1)
# How long the runner lets a run's frames pile up before publishing them as one channel-layer message
# (milliseconds; 0 = publish as soon as the flusher is free). A run's last frame is never held back.
RUN_FRAME_FLUSH_SECONDS = _int("RUN_FRAME_FLUSH_MS", 20, minimum=0) / 1000
# The same window while nobody listens to the run's group (a REST run started with ?wait=false): a listener who
# joins gets the next batch at most this much later, then the short window again.
RUN_FRAME_IDLE_FLUSH_SECONDS = _int("RUN_FRAME_IDLE_FLUSH_MS", 250, minimum=0) / 1000

# ------------------------------------------------------------------ triggers and retention
# Event webhooks: body cap, how far X-AgenticOS-Timestamp may be off, requests per trigger per minute.
TRIGGER_WEBHOOK_MAX_BYTES = _int("TRIGGER_WEBHOOK_MAX_BYTES", 256 * 1024, minimum=1024)
TRIGGER_SIGNATURE_TOLERANCE_SECONDS = _int("TRIGGER_SIGNATURE_TOLERANCE_SECONDS", 300, minimum=30)
TRIGGER_RATE_LIMIT_PER_MINUTE = _int("TRIGGER_RATE_LIMIT_PER_MINUTE", 60, minimum=1)
# How much of an event's payload reaches the model (characters, as marked data in the prompt).
TRIGGER_PAYLOAD_MAX_CHARS = _int("TRIGGER_PAYLOAD_MAX_CHARS", 16_000, minimum=500)
TRIGGER_MIN_INTERVAL_SECONDS = _int("TRIGGER_MIN_INTERVAL_SECONDS", 60, minimum=60)
# Retention sweeps (deployment defaults). The spend ledger is never deleted: budgets are computed from it.
RETENTION_AUDIT_DAYS = _int("RETENTION_AUDIT_DAYS", 400, minimum=1)
RETENTION_WORKSPACE_IDLE_DAYS = _int("RETENTION_WORKSPACE_IDLE_DAYS", 90, minimum=1)
RETENTION_BATCH_SIZE = _int("RETENTION_BATCH_SIZE", 1000, minimum=10)

# ------------------------------------------------------------------ evaluation suites (evals/)
# Cases of one suite run running at once (each a real run on the runs workers), and how many a suite holds.
EVAL_MAX_CONCURRENT = _int("EVAL_MAX_CONCURRENT", 4, minimum=1)
EVAL_MAX_CASES = _int("EVAL_MAX_CASES", 200, minimum=1)
# A case's run not finished by then is stopped and the case fails; how often the driver looks at its runs.
EVAL_CASE_TIMEOUT_SECONDS = _int("EVAL_CASE_TIMEOUT_SECONDS", 600, minimum=5)
EVAL_POLL_SECONDS = _int("EVAL_POLL_MS", 250, minimum=20) / 1000
# Days a run's transcript (messages, tool calls, the run's prompt and answer) is kept; 0 = keep (the default).
# Each organization may set its own (Settings → Data retention); the run row and its spend stay either way.
RETENTION_TRANSCRIPT_DAYS = _int("RETENTION_TRANSCRIPT_DAYS", 0, minimum=0)

# ------------------------------------------------------------------ generated media (media/)
# Images, speech and video agents make: stored per organization (default_storage: MEDIA_ROOT or S3), served by
# /api/v1/generated/<filename>. The quota is checked before any provider is paid; 0 = no quota.
GENERATED_MEDIA_QUOTA_MB = _int("GENERATED_MEDIA_QUOTA_MB", 1024, minimum=0)
# The providers' endpoints (operator settings, reached through the model-host guard:
# MODEL_ALLOWED_PRIVATE_HOSTS); empty = the catalog's public endpoint (capabilities/*/..._models.json).
GENERATED_MEDIA_OPENAI_BASE_URL = env.str("GENERATED_MEDIA_OPENAI_BASE_URL", default="https://api.openai.com/v1")
GENERATED_MEDIA_ELEVENLABS_BASE_URL = env.str("GENERATED_MEDIA_ELEVENLABS_BASE_URL", default="")
GENERATED_MEDIA_GOOGLE_BASE_URL = env.str("GENERATED_MEDIA_GOOGLE_BASE_URL", default="")
GENERATED_MEDIA_BYTEPLUS_BASE_URL = env.str("GENERATED_MEDIA_BYTEPLUS_BASE_URL", default="")
GENERATED_MEDIA_XAI_BASE_URL = env.str("GENERATED_MEDIA_XAI_BASE_URL", default="")
GENERATED_MEDIA_ALIBABA_BASE_URL = env.str("GENERATED_MEDIA_ALIBABA_BASE_URL", default="")
# The coding agent's CLIs call these instead of api.anthropic.com / api.openai.com when set (a gateway).
CODING_AGENT_ANTHROPIC_BASE_URL = env.str("CODING_AGENT_ANTHROPIC_BASE_URL", default="")
CODING_AGENT_OPENAI_BASE_URL = env.str("CODING_AGENT_OPENAI_BASE_URL", default="")
# Codex signed in with ChatGPT: its model API and the token endpoint it refreshes at (empty: chatgpt.com and
# auth.openai.com, Codex's own). sandboxd's SANDBOXD_EGRESS_ALLOW must name them.
CODING_AGENT_CHATGPT_BASE_URL = env.str("CODING_AGENT_CHATGPT_BASE_URL", default="")
CODING_AGENT_CHATGPT_TOKEN_URL = env.str("CODING_AGENT_CHATGPT_TOKEN_URL", default="")

# ------------------------------------------------------------------ applications and visuals (issue 21)
# Published applications (capabilities/artifacts) and drawings (capabilities/visuals): one page or drawing at
# most this many bytes (UTF-8), served in the opaque-origin sandbox with the vendored libraries only.
ARTIFACT_MAX_BYTES = _int("ARTIFACT_MAX_BYTES", 1024 * 1024, minimum=1024)
# How long `draw` waits for the watching console's report on how the drawing rendered.
VISUAL_REPORT_WAIT_SECONDS = _int("VISUAL_REPORT_WAIT_SECONDS", 10, minimum=0)
VISUAL_MAP_TILES = env.str("VISUAL_MAP_TILES", default="").strip()  # map tile URL template (visuals/maps.py)

# ------------------------------------------------------------------ Content-Security-Policy (django-csp)
# Every page's scripts are files of this server: no inline script, no handler in the markup, no eval. (A drawing's
# frame is not a srcdoc document, which would inherit this policy: it loads /apps/frame, with a policy of its own —
# console/applications.py.) Styles: 'unsafe-inline' stays —
# markdown answers, the charts' SVG, the widget's shadow root and the drawings set style attributes, and a style
# cannot run script; the risk it leaves (CSS-based exfiltration from a page already injected) is small beside
# what script-src closes. Connections (fetch and the sockets) and frames go to this server only. The API docs
# (Swagger UI) are the library's page with its inline script, left out.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/api/docs"],
    "DIRECTIVES": {
        "default-src": [csp_constants.SELF],
        "script-src": [csp_constants.SELF],
        "style-src": [csp_constants.SELF, csp_constants.UNSAFE_INLINE],
        "img-src": [csp_constants.SELF, "data:", "blob:"],
        "media-src": [csp_constants.SELF, "blob:"],
        "font-src": [csp_constants.SELF, "data:"],
        "connect-src": [csp_constants.SELF],
        "frame-src": [csp_constants.SELF],
        "object-src": [csp_constants.NONE],
        "base-uri": [csp_constants.SELF],
    },
}

# ------------------------------------------------------------------ observability
# Prometheus /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, /metrics is a 404 (never open).
# Traces (agenticos/telemetry.py) are read from the OTEL_* variables by each process's entry point.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="").strip()
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 16 characters (or unset, which turns /metrics off).")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}

# ------------------------------------------------------------------ remote agents over A2A (issue 19)
# Registrations of other providers' agents by agent card (capabilities/remote_agents). Every card and endpoint
# request goes through agenticos/netguard.py with the tools' allowance (TOOL_ALLOWED_PRIVATE_HOSTS).
# A keyed registration must be https; hosts listed here may be reached over plain http with the key (a
# deployment's own A2A endpoint on its internal network, where there is no TLS hop). Empty: https only.
REMOTE_AGENT_PLAIN_HTTP_HOSTS = env.list("REMOTE_AGENT_PLAIN_HTTP_HOSTS", default=[])
# How long one A2A message/send may take (a remote agent that runs a whole turn before answering).
REMOTE_AGENT_TIMEOUT_SECONDS = _int("REMOTE_AGENT_TIMEOUT_SECONDS", 300, minimum=5)

# ------------------------------------------------------------------ web browser (capabilities/browser)
# Browser services (Chromium DevTools endpoints) an agent's cdp_url may name, by host; empty refuses the browser
# capability at publish. `make run` starts Debian's chromium on 127.0.0.1 and lists it (config/launcher.py).
BROWSER_CDP_ALLOWED_HOSTS = env.list("BROWSER_CDP_ALLOWED_HOSTS", default=[])
# This deployment's own browser service (its DevTools endpoint, e.g. http://browser:9222): what an agent's browser
# uses when its cdp_url is empty, allowed whatever BROWSER_CDP_ALLOWED_HOSTS lists. `make run` sets it to the
# chromium it starts. Empty: no own service, an agent must name an allowed one.
BROWSER_CDP_URL = env.str("BROWSER_CDP_URL", default="")
# Private hosts a page in the agents' browser may load although `browser_use.allowed_domains` names them: the
# operator's decision, never an agent author's (issue 37). The browser's DevTools, sandboxd, the web server,
# PostgreSQL and Redis stay unreachable from a page whatever is listed here.
BROWSER_ALLOWED_PRIVATE_HOSTS = _host_list("BROWSER_ALLOWED_PRIVATE_HOSTS")
# How long a browse waits for the browser service to accept its DevTools connection (a Chromium just started on
# a busy host answers /json/version well before it takes a client).
BROWSER_CONNECT_TIMEOUT_SECONDS = _int("BROWSER_CONNECT_TIMEOUT_SECONDS", 30, minimum=1)
