#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from agenticos import telemetry

    telemetry.setup("manage")  # runserver's requests, channel_supervisor's enqueued runs; off without an endpoint
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
