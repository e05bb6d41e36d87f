"""GET /healthz: one entry per dependency; 503 when the database or Redis is down."""

from __future__ import annotations

import redis
from django.conf import settings
from django.db import connection
from django.http import JsonResponse


def check_database() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True, "ok"
    except Exception as exc:
        return False, type(exc).__name__


def check_pgvector() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        return (True, f"vector {row[0]}") if row else (False, "extension not installed")
    except Exception as exc:
        return False, type(exc).__name__


def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def check_redis() -> tuple[bool, str]:
    try:
        redis_client().ping()
        return True, "ok"
    except Exception as exc:
        return False, type(exc).__name__


def healthz(request):
    checks = {"database": check_database(), "pgvector": check_pgvector(), "redis": check_redis()}
    healthy = checks["database"][0] and checks["redis"][0]
    body = {
        "status": "ok" if healthy else "unavailable",
        "checks": {name: {"ok": ok, "detail": detail} for name, (ok, detail) in checks.items()},
    }
    return JsonResponse(body, status=200 if healthy else 503)
