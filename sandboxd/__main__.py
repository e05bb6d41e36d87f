"""`python -m sandboxd`: the sandbox service on SANDBOXD_HOST:SANDBOXD_PORT (default 127.0.0.1:8765), or on the
listening socket it inherited as file descriptor SANDBOXD_FD."""

from __future__ import annotations

import logging
import os
import shutil
import sys

import uvicorn

from sandboxd import jail
from sandboxd.app import create_app
from sandboxd.config import ConfigError, check_reachable, from_env


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if "--check" in sys.argv[1:]:  # can bubblewrap isolate a command on this machine? (the launcher asks)
        bwrap = shutil.which(os.environ.get("SANDBOXD_BWRAP", "bwrap"))
        problem = jail.probe(bwrap) if bwrap else "bubblewrap (bwrap) is not installed"
        print(f"sandboxd: {problem or 'bubblewrap works here'}", file=sys.stderr if problem else sys.stdout)
        return 2 if problem else 0
    try:
        config = from_env()
    except ConfigError as exc:
        print(f"sandboxd: {exc}", file=sys.stderr)
        return 2
    problem = jail.probe(config.bwrap)
    if problem:
        print(f"sandboxd: bubblewrap cannot isolate a command here: {problem}", file=sys.stderr)
        return 2
    config.root.mkdir(parents=True, exist_ok=True)
    config.workspaces.mkdir(exist_ok=True)
    try:
        check_reachable(config)
    except ConfigError as exc:
        print(f"sandboxd: {exc}", file=sys.stderr)
        return 2
    logging.getLogger("sandboxd").info("runtimes: %s; root %s", ", ".join(config.runtimes) or "none", config.root)
    app = create_app(config)
    if config.fd is not None:  # the starter holds the port: serve on the socket it handed down
        uvicorn.run(app, fd=config.fd, log_level="warning", access_log=False)
    else:
        uvicorn.run(app, host=config.host, port=config.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
