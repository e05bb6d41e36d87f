"""Servers on a port nobody else can take: the test binds port 0 and keeps the socket, then the server serves
on that very socket. (Binding 0, closing, then starting a server on the number races every other process
on the machine — a parallel test worker among them — for it.)"""

from __future__ import annotations

import socket


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """Bound to a free port and listening; inheritable, so a subprocess can be handed it (`pass_fds`)."""
    sock = socket.create_server((host, 0))
    sock.set_inheritable(True)
    return sock


def daphne_on_socket(command: list[str], sock: socket.socket) -> list[str]:
    """A daphne command line (config.launcher.daphne_command) serving on `sock` instead of its endpoint."""
    command = list(command)
    for flag in ("-b", "-p", "-e"):
        if flag in command:
            at = command.index(flag)
            del command[at : at + 2]
    application_at = len(command) - 1  # the application path is the last argument
    return [*command[:application_at], "--fd", str(sock.fileno()), command[application_at]]
