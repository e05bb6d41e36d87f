from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The web console: the top layer (it may import every app; nothing imports it). Its pages, templates
    (console/templates: base.html, the branded 404/500, registration/, console/) and static files
    (console/static/console) live here; third-party JS shared with the embeds stays in the project's static/vendor."""

    name = "console"
    label = "console"
    verbose_name = "Web console"
