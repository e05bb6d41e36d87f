# AgenticOS production image: one image for web (daphne), worker and beat (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    AGENTICOS_DATA_DIR=/data \
    STATIC_ROOT=/app/staticfiles

WORKDIR /app

# bubblewrap: the isolation sandboxd runs every command under (the `sandboxd` service of docker-compose.yml).
# git + Node.js: the sandbox's `workbench` runtime, with the coding agent's CLIs (pinned as in the Makefile's
# WORKBENCH_CLIS) in /opt/workbench, which sandboxd mounts read-only into a workspace (SANDBOXD_WORKBENCH_DIR).
# chromium-headless-shell + a font: the worker renders the drawings an agent made to PNGs for chat platforms
# (channelbots/visuals_out.py); without a browser they go out as their console links.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap git nodejs npm \
    chromium-headless-shell fonts-liberation \
    && npm install --prefix /opt/workbench --no-audit --no-fund --loglevel=error \
       @anthropic-ai/claude-code@2.1.288 @openai/codex@0.160.0 \
    && npm cache clean --force && rm -rf /var/lib/apt/lists/*

# libpq-free: psycopg[binary] ships its own; curl-free: the healthcheck uses Python.
RUN groupadd --system app && useradd --system --gid app --home-dir /app app \
    && mkdir -p /data/media && chown -R app:app /data

# Everything the app needs at run time; .dockerignore keeps out the venv, data, tests and VCS.
COPY . .

RUN pip install '.[browser]'

# Settings need their production variables even at build time; these throwaway values only let
# collectstatic import them (nothing connects to the database or Redis here).
RUN DEBUG=false SECRET_KEY=collectstatic-only VAULT_MASTER_KEY=collectstatic-only-0000000000 \
    DATABASE_URL=postgres://build@localhost:5432/build REDIS_URL=redis://localhost:6379/0 \
    AGENTICOS_DATA_DIR=/tmp/build-data \
    python manage.py collectstatic --noinput \
    && rm -rf /tmp/build-data

USER app
EXPOSE 8000
VOLUME ["/data"]

# Commands run from /app with `python -m`, so the source tree here (with templates/ and static/)
# is what gets imported.
CMD ["python", "-m", "daphne", "-e", "tcp:port=8000:interface=0.0.0.0:backlog=2048", "--proxy-headers", "--websocket_connect_timeout", "30", "--ping-interval", "10", "--ping-timeout", "20", "config.asgi:application"]
