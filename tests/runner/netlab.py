"""Machines on this machine, for tests that need a deployment spread over hosts: a "lab" network namespace with
a bridge (10.77.<n>.0/24), and hosts, each a network namespace (and UTS namespace: its own hostname) of its own
with a veth on that bridge. Nothing a host does reaches another but through TCP over the bridge; no host shares
the host machine's loopback or network.

The "services host" is the lab namespace itself, at .1: a relay there answers TCP (PostgreSQL's and Redis's
ports) and carries each connection to the embedded server's Unix socket (the test servers listen on sockets only:
from the hosts' side they are a database machine reached over TCP). Servers of the test process (the fake model,
the fake REST API, on the machine's loopback) are published on the bridge the same way, through a socket file a
relay in the test's own namespace serves; and a host's port is reached from the test the other way round.

Needs root with CAP_NET_ADMIN, `unshare`, `nsenter` and `ip` (`available()` says; the test is skipped without).

    python -m tests.runner.netlab relay LISTEN CONNECT   # tcp:HOST:PORT or unix:PATH, both sides
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def available() -> str:
    """Empty when this machine can build a lab; else why not."""
    if os.geteuid() != 0:
        return "not root"
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed"
    probe = subprocess.run(["unshare", "--net", "ip", "link", "add", "probe0", "type", "bridge"],
                           capture_output=True, text=True, check=False)
    return "" if probe.returncode == 0 else f"cannot make a network namespace with a bridge: {probe.stderr.strip()}"


# ------------------------------------------------------------------ the relay (a process of its own)


async def _open(target: str):
    kind, _, rest = target.partition(":")
    if kind == "unix":
        return await asyncio.open_unix_connection(rest)
    host, _, port = rest.rpartition(":")
    return await asyncio.open_connection(host, int(port))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def relay(listen: str, connect: str) -> None:
    """Every connection accepted on `listen` is carried, both ways, to a new one to `connect`."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await _open(connect)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    kind, _, rest = listen.partition(":")
    if kind == "unix":
        Path(rest).unlink(missing_ok=True)
        server = await asyncio.start_unix_server(handle, rest)
    else:
        host, _, port = rest.rpartition(":")
        server = await asyncio.start_server(handle, host, int(port), backlog=512)
    print("relaying", flush=True)
    async with server:
        await server.serve_forever()


# ------------------------------------------------------------------ the lab


@dataclass
class Host:
    name: str
    address: str
    holder: subprocess.Popen
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.holder.pid

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside this host's network and UTS namespaces."""
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", f"--uts=/proc/{self.pid}/ns/uts", *argv]

    def lose(self) -> None:
        """The machine is gone: every process on it killed at once, its network with it."""
        for proc in [*self.processes, self.holder]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


class Lab:
    def __init__(self, base: Path, subnet: int = 77) -> None:
        self.base = base
        self.prefix = f"10.{subnet}.{os.getpid() % 250}"
        self.services = f"{self.prefix}.1"
        self.hosts: list[Host] = []
        self.relays: list[subprocess.Popen] = []
        self.lab = subprocess.Popen(["unshare", "--net", "sleep", "infinity"], start_new_session=True)
        self._wait_ns(self.lab.pid)
        self._in_lab(["ip", "link", "set", "lo", "up"])
        self._in_lab(["ip", "link", "add", "br0", "type", "bridge"])
        self._in_lab(["ip", "addr", "add", f"{self.services}/24", "dev", "br0"])
        self._in_lab(["ip", "link", "set", "br0", "up"])

    def _wait_ns(self, pid: int) -> None:
        own = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if os.readlink(f"/proc/{pid}/ns/net") != own:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"process {pid} did not enter a network namespace of its own")

    def _in_lab(self, argv: list[str]) -> None:
        subprocess.run(["nsenter", f"--net=/proc/{self.lab.pid}/ns/net", *argv], check=True, capture_output=True)

    def add_host(self, name: str) -> Host:
        number = len(self.hosts) + 10
        holder = subprocess.Popen(["unshare", "--net", "--uts", "sh", "-c", f"hostname {name}; exec sleep infinity"],
                                  start_new_session=True)
        self._wait_ns(holder.pid)
        host = Host(name=name, address=f"{self.prefix}.{number}", holder=holder)
        veth = f"v{number}-{os.getpid() % 10000}"[:15]
        self._in_lab(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(holder.pid)])
        self._in_lab(["ip", "link", "set", veth, "master", "br0"])
        self._in_lab(["ip", "link", "set", veth, "up"])
        for argv in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", f"{host.address}/24", "dev", "eth0"],
                     ["ip", "link", "set", "eth0", "up"]):
            subprocess.run(["nsenter", f"--net=/proc/{holder.pid}/ns/net", *argv], check=True, capture_output=True)
        self.hosts.append(host)
        return host

    def _relay(self, argv_prefix: list[str], listen: str, connect: str) -> None:
        proc = subprocess.Popen([*argv_prefix, sys.executable, "-m", "tests.runner.netlab", "relay", listen, connect],
                                cwd=ROOT, stdout=subprocess.PIPE, start_new_session=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"relaying", listen
        self.relays.append(proc)

    def serve(self, port: int, unix_path: str) -> str:
        """The services host answers TCP on `port` by a connection to the Unix socket `unix_path`. Returns its
        address."""
        self._relay(["nsenter", f"--net=/proc/{self.lab.pid}/ns/net"], f"tcp:{self.services}:{port}",
                    f"unix:{unix_path}")
        return self.services

    def publish(self, port: int) -> str:
        """The test's own 127.0.0.1:`port`, answered by the services host on the same port."""
        path = str(self.base / f"published-{port}.sock")
        self._relay([], f"unix:{path}", f"tcp:127.0.0.1:{port}")
        return self.serve(port, path)

    def reach(self, host: Host, port: int) -> str:
        """A socket file in the test's namespace carried to `host`'s `port` (for httpx's `uds=`)."""
        path = str(self.base / f"reach-{host.name}-{port}.sock")
        self._relay(["nsenter", f"--net=/proc/{self.lab.pid}/ns/net"], f"unix:{path}", f"tcp:{host.address}:{port}")
        return path

    def start(self, host: Host, argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
        with log.open("wb") as out:
            proc = subprocess.Popen(host.command(argv), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        host.processes.append(proc)
        return proc

    def close(self) -> None:
        for host in self.hosts:
            host.lose()
        for proc in [*self.relays, self.lab]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


if __name__ == "__main__":
    if sys.argv[1:2] == ["relay"] and len(sys.argv) == 4:
        asyncio.run(relay(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
