"""`manage.py sandbox_token` (`make sandbox-token`): the service token of the deployment's own sandboxd.

Writes a new random token to SANDBOXD_TOKEN_FILE (mode 0600), which both sandboxd (SANDBOXD_TOKEN_FILE)
and this platform read; an existing token is kept unless --rotate. Each organization's "This deployment's
sandbox" connection holds a copy sealed in its own vault: --rotate re-seals those copies too, so running
sandboxes keep working once sandboxd restarts with the new token. The token is printed only with --print
(for a compose .env: SANDBOXD_TOKEN=...).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create (or --rotate) the service token of the deployment's own sandboxd."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--rotate", action="store_true", help="Replace an existing token.")
        parser.add_argument("--print", action="store_true", dest="show",
                            help="Print the token (for SANDBOXD_TOKEN in a compose .env).")

    def handle(self, *args: Any, rotate: bool = False, show: bool = False, **options: Any) -> None:
        path = Path(settings.SANDBOXD_TOKEN_FILE)
        if path.exists() and not rotate:
            token = path.read_text().strip()
            self.stdout.write(f"A sandboxd token already exists in {path} (use --rotate to replace it).")
        else:
            token = secrets.token_urlsafe(32)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(token + "\n")
            os.chmod(path, 0o600)
            self.stdout.write(f"Wrote a new sandboxd token to {path}.")
            if rotate:
                from workspaces.connections import reseal_deployment_token

                count = reseal_deployment_token(token)
                self.stdout.write(f"Re-sealed the token of {count} organization connection(s); restart sandboxd.")
        if len(token) < 32:
            raise CommandError(f"The token in {path} is shorter than 32 characters; run with --rotate.")
        if show:
            self.stdout.write(token)
