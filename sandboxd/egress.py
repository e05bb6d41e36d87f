"""A background task's way out: the upstreams (host:port) it names, each on the operator's allow-list
(SANDBOXD_EGRESS_ALLOW), and nothing else.

The task's network namespace keeps no route out. For each upstream sandboxd listens on a Unix socket in a folder
of its own (bound read-only into the jail at /run/egress) and connects every connection made there to that one
upstream, piping bytes both ways: TLS stays end to end between the program and the upstream, so a key in its
requests is never seen here. Inside, a relay (node, which the runtimes that need egress carry) listens on the
jail's own loopback and forwards to the socket, and the jail's /etc/hosts names the upstream's host as
127.0.0.1: a program given `https://api.anthropic.com:10443` reaches api.anthropic.com:443 and nothing else.

Ports below 1024 cannot be bound by an unprivileged process, so an upstream's port p is heard inside on
`local_port(p)` (p + 10000 below 1024, p otherwise); the platform writes its URLs with the same rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

INSIDE = "/run/egress"
READY = "/tmp/.egress-ready"  # noqa: S108 — inside the jail's own tmpfs
RELAY_JS = """\
const net = require('net'), fs = require('fs');
const specs = process.argv.slice(2); let ready = 0;
for (const spec of specs) {
  const at = spec.indexOf('='), port = +spec.slice(0, at), sock = spec.slice(at + 1);
  net.createServer((c) => {
    const u = net.connect(sock); c.pipe(u); u.pipe(c);
    for (const [a, b] of [[c, u], [u, c]]) { a.on('error', () => b.destroy()); a.on('close', () => b.destroy()); }
  }).listen(port, '127.0.0.1', () => { if (++ready === specs.length) fs.writeFileSync('READY_PATH', ''); });
}
""".replace("READY_PATH", READY)


class EgressRefused(ValueError):
    pass


def local_port(port: int) -> int:
    return port + 10000 if port < 1024 else port


def parse(value: str) -> tuple[str, int]:
    """'host:port' (a hostname, or an IPv4 address) → (host, port)."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise EgressRefused(f"An upstream is host:port, not {value[:100]!r}.")
    return host.lower(), int(port)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass
class Egress:
    """The relays of one task: started before it, closed after it."""

    folder: Path
    upstreams: list[tuple[str, int]]
    servers: list[asyncio.AbstractServer] = field(default_factory=list)

    @classmethod
    async def open(cls, folder: Path, upstreams: list[tuple[str, int]], *, base_hosts: str,
                   owner: tuple[int, int] | None) -> Egress:
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)  # noqa: S103 — the jail's uid must reach the sockets
        egress = cls(folder=folder, upstreams=upstreams)
        for index, (host, port) in enumerate(upstreams):
            path = folder / f"{index}.sock"
            server = await asyncio.start_unix_server(egress._handler(host, port), path=str(path))
            os.chmod(path, 0o777)  # noqa: S103 — the jail's uid connects; the folder is the jail's alone
            egress.servers.append(server)
        (folder / "relay.js").write_text(RELAY_JS)
        names = sorted({host for host, _ in upstreams if not _is_ip(host)})
        (folder / "hosts").write_text(base_hosts + "".join(f"127.0.0.1 {name}\n" for name in names))
        for name in ("relay.js", "hosts"):
            os.chmod(folder / name, 0o644)
        if owner is not None:
            os.chown(folder, *owner)
        return egress

    def _handler(self, host: str, port: int):
        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            with contextlib.suppress(OSError):
                writer.close()

        async def handle(inner_reader: asyncio.StreamReader, inner_writer: asyncio.StreamWriter) -> None:
            try:
                outer_reader, outer_writer = await asyncio.wait_for(asyncio.open_connection(host, port), 15)
            except (OSError, TimeoutError):
                inner_writer.close()
                return
            await asyncio.gather(pipe(inner_reader, outer_writer), pipe(outer_reader, inner_writer))

        return handle

    @property
    def binds(self) -> tuple[tuple[str, str], ...]:
        return ((str(self.folder), INSIDE),)

    @property
    def hosts(self) -> Path:
        return self.folder / "hosts"

    def wrap(self, command: str) -> str:
        """The task's command after its relays listen (they die with the jail's PID namespace)."""
        specs = " ".join(f"{local_port(port)}={INSIDE}/{i}.sock" for i, (_, port) in enumerate(self.upstreams))
        wait = (f"i=0; while [ ! -e {READY} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done")
        return f"node {INSIDE}/relay.js {specs} >/dev/null 2>&1 &\n{wait}\n{command}"

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        shutil.rmtree(self.folder, ignore_errors=True)
