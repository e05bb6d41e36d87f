"""The peer: Agno's AgentOS, installed from PyPI into a virtualenv of its own, against the same local
OpenAI-compatible model server and the same run as bench/concurrency.py — so anyone can check the comparison
in docs/benchmarks.md on their own machine.

    .venv/bin/python bench/peer_agno.py [--runs 50,300] [--agno 3.1.10] [--workers 2] [--venv DIR]
                                        [--db-url postgresql+psycopg://…]

It creates (once) a virtualenv under `.bench/agno-<version>` (or --venv) with `agno`, FastAPI, uvicorn and the
OpenAI SDK, writes an AgentOS app there — one agent, an OpenAI-compatible model at the bench's model server,
a `create_chart` tool (the call the model server makes), its sessions in SQLite (or PostgreSQL with --db-url) — and serves it with uvicorn
(`--workers`, one per core by default). Each of N clients then calls `POST /agents/clock/runs` with
`stream=true` (AgentOS' default) and reads the event stream to its end: every event reaches a client, as the
platform's sockets do. Printed per N, as bench/concurrency.py prints them: peak streams at the model server,
start delay p50/p95, wall against one run alone, CPU ms per run of the AgentOS processes (and of the model
server apart), errors. Nothing of this project is imported by the peer; the model server is
bench/concurrency.py's own (`--serve-model`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

APP = '''
import os

from agno.agent import Agent
from agno.models.openai.like import OpenAILike
from agno.os import AgentOS


def create_chart(chart_type: str, title: str, x_values: list[str], series: list[dict]) -> dict:
    """Draw a chart from numbers you already have."""
    return {"kind": "chart", "chart_type": chart_type, "title": title, "x_values": x_values, "series": series}


if os.environ.get("PEER_DB_URL"):
    from agno.db.postgres import PostgresDb

    db = PostgresDb(db_url=os.environ["PEER_DB_URL"])
else:
    from agno.db.sqlite import SqliteDb

    db = SqliteDb(db_file=os.environ["PEER_DB_FILE"])

agent = Agent(
    id="clock",
    name="Clock",
    model=OpenAILike(id="gpt-4o-mini", base_url=os.environ["PEER_MODEL_URL"], api_key="bench"),
    instructions="Answer after checking the time.",
    tools=[create_chart],
    db=db,
)
app = AgentOS(agents=[agent]).get_app()
'''


def ensure_venv(venv: Path, version: str, postgres: bool) -> Path:
    python = venv / "bin" / "python"
    packages = [f"agno=={version}", "fastapi", "uvicorn", "openai", "sqlalchemy[asyncio]", "aiosqlite",
                "python-multipart", "httpx", *(["psycopg[binary]"] if postgres else [])]
    marker = venv / (".installed-" + "-".join(sorted(packages)).replace("/", "_").replace("[", "_").replace("]", "_"))
    if marker.exists():
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True)
    marker.touch()
    return python


# bench/turn_overhead.py's helpers, without its Django imports: the peer needs no database of ours.
def cpu_seconds(pids) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


def wait_quiet(pids, limit: float = 60.0) -> None:
    deadline = time.time() + limit
    while time.time() < deadline:
        before = cpu_seconds(pids)
        time.sleep(1)
        if cpu_seconds(pids) - before < 0.05:
            return


def start(cmd, env, name):
    log = open(f"/tmp/agenticos-bench-{name}.log", "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def tree_pids(root: int) -> list[int]:
    """`root` and its descendants (uvicorn's workers are children of its supervisor)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


async def fire(base: str, n: int) -> tuple[dict[str, float], dict[str, float], list]:
    """n runs at once, each streamed to its end. Returns {marker: sent at}, {marker: ended at}, errors."""
    import httpx

    sent: dict[str, float] = {}
    ended: dict[str, float] = {}
    errors: list = []
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=300) as client:
        async def one() -> None:
            marker = f"bench-run-{uuid.uuid4().hex}"
            sent[marker] = time.time()
            try:
                async with client.stream("POST", "/agents/clock/runs",
                                         data={"message": f"{marker}: what time is it?", "stream": "true"}) as response:
                    if response.status_code != 200:
                        errors.append((response.status_code, (await response.aread())[:200]))
                        return
                    async for _ in response.aiter_lines():
                        pass
            except httpx.HTTPError as exc:
                errors.append(repr(exc))
                return
            ended[marker] = time.time()

        await asyncio.gather(*(one() for _ in range(n)))
    return sent, ended, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", default="50")
    parser.add_argument("--agno", default="3.1.10", help="the agno version from PyPI")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--venv", type=Path, default=None)
    parser.add_argument("--db-url", default="", help="PostgreSQL for AgentOS' sessions (default: SQLite)")
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=2.3)
    args = parser.parse_args()

    from bench.concurrency import model_stats, percentile

    venv = args.venv or ROOT / ".bench" / f"agno-{args.agno}"
    python = ensure_venv(venv, args.agno, bool(args.db_url))
    (venv / "peer_app.py").write_text(APP)
    model_port, peer_port = free_port(), free_port()
    env = dict(os.environ, PEER_MODEL_URL=f"http://127.0.0.1:{model_port}/v1", PEER_DB_FILE=str(venv / "peer.db"),
               PEER_DB_URL=args.db_url, PYTHONUNBUFFERED="1")
    model = start([sys.executable, str(ROOT / "bench" / "concurrency.py"), "--serve-model", str(model_port),
                   "--tokens", str(args.tokens), "--seconds", str(args.seconds)], env, "peer-model")
    peer = subprocess.Popen([str(python), "-m", "uvicorn", "peer_app:app", "--port", str(peer_port), "--workers",
                             str(args.workers), "--log-level", "warning"], cwd=venv, env=env, start_new_session=True,
                            stdout=open("/tmp/agenticos-bench-peer.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        wait_port(model_port)
        wait_port(peer_port, timeout=120)
        base = f"http://127.0.0.1:{peer_port}"
        for _ in range(2 * args.workers):  # warm every worker
            asyncio.run(fire(base, 1))
        wait_quiet(tree_pids(peer.pid), limit=10)
        print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, load "
              f"{os.getloadavg()[0]:.1f}; Agno AgentOS {args.agno}, uvicorn × {args.workers}, "
              f"{'PostgreSQL' if args.db_url else 'SQLite'}; model: tool call, then {args.tokens} tokens over "
              f"{args.seconds} s")
        model_stats(model_port, "/reset")
        sent, ended, errors = asyncio.run(fire(base, 1))
        alone = max(ended.values()) - min(sent.values()) if ended else float("nan")
        print(f"one run alone: {alone:.2f} s{'; errors ' + str(errors) if errors else ''}")
        for n in [int(value) for value in args.runs.split(",")]:
            wait_quiet(tree_pids(peer.pid), limit=10)
            model_stats(model_port, "/reset")
            pids = tree_pids(peer.pid)
            load = os.getloadavg()[0]
            before, before_model = cpu_seconds(pids), cpu_seconds([model.pid])
            started = time.time()
            sent, ended, errors = asyncio.run(fire(base, n))
            wall = max(ended.values(), default=float("nan")) - started
            cpu, cpu_model = cpu_seconds(pids) - before, cpu_seconds([model.pid]) - before_model
            stats = model_stats(model_port)
            delays = [stats["first_seen"][m] - sent[m] for m in sent if m in stats["first_seen"]]
            print(f"N={n:>5}: peak streams {stats['peak']:>5}, start delay p50 {percentile(delays, 0.5):.2f} s / p95 "
                  f"{percentile(delays, 0.95):.2f} s, wall {wall:.2f} s = {wall / alone:.2f}x one run; completed "
                  f"{len(ended)}/{n}, model requests {stats['requests'] / n:.1f} per run, {len(errors)} errors{': ' + str(errors[:3]) if errors else ''}; load {load:.1f} "
                  f"before, {os.getloadavg()[0]:.1f} after")
            print(f"         CPU ms/run: AgentOS {cpu * 1000 / n:.1f} (all but the model), model {cpu_model * 1000 / n:.1f}")
    finally:
        import signal

        for proc in (peer, model):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
