"""No Redis client of this project sends CLIENT SETINFO: the embedded Redis (6.2) answers it with an error,
which once stopped a Celery worker's consumer for good."""

from __future__ import annotations

import asyncio

import redis
import redis.asyncio
from django.conf import settings

import agenticos  # noqa: F401  (the patch is applied when the Celery app loads)


def test_a_sync_connection_sends_no_client_setinfo():
    client = redis.Redis.from_url(settings.REDIS_URL)
    connection = client.connection_pool.get_connection()
    try:
        assert connection.driver_info is None
        assert client.ping()
    finally:
        client.connection_pool.release(connection)


def test_an_asyncio_connection_sends_no_client_setinfo():
    async def check() -> bool:
        client = redis.asyncio.Redis.from_url(settings.REDIS_URL)
        try:
            connection = await client.connection_pool.get_connection()
            await client.connection_pool.release(connection)
            return connection.driver_info is None and bool(await client.ping())
        finally:
            await client.aclose()

    assert asyncio.run(check())


def test_kombu_broker_connections_skip_it_too():
    from config.celery import app

    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        assert client.ping()
        connection = client.connection_pool.get_connection()
        try:
            assert connection.driver_info is None
        finally:
            client.connection_pool.release(connection)
