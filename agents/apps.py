from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The approval_decided receiver lives beside the chat socket it notifies; a decision taken in a Celery
        # worker or a bot process (which never import the ASGI routing) must broadcast it too.
        import agents.consumers  # noqa: F401
        from agents import extensions, rollouts, run_handle, runs, titles
        from agents.providers import sdk_params
        from agents.runner import assembly, stream_locks

        # The agent libraries' per-event and per-request work this project does not need (each module says why).
        stream_locks.install()
        sdk_params.install()
        # The module itself, so a test's monkeypatch of assembly.build_model reaches a delegate's model too.
        run_handle.register_model_source(assembly)
        run_handle.register_run_delivery(runs.deliver_after_commit)

        extensions.register_run_ended("rollouts", rollouts.run_ended)
        extensions.register_run_ended("titles", titles.run_ended)
