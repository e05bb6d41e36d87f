"""The project's configuration: settings, URLs, ASGI and routing, the Celery app, and the launcher with its
embedded services. It sits above every app (it names them all); nothing below imports it but `config.celery`'s
app, which Celery itself loads (docs/architecture.md, "The map")."""

from config.celery import app as celery_app

__all__ = ["celery_app"]
