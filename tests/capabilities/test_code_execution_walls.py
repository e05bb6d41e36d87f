"""Issue 37, findings 1 and 2: one organization's run_python never reaches another's files or processes.

Before, run_python's only wall was an audit hook that resolved a relative path against the current directory
while `os.open(path, dir_fd=fd)` resolves it against `fd`: a program that `chdir`ed into a deep subfolder and
opened `../../…` with `dir_fd` read any file of the host (another organization's workspaces and attachments,
`services.env`), `os.listdir(fd)` went unchecked, and `os.killpg` killed another organization's commands. Now the
program runs in bubblewrap's walls (its own mount and PID namespaces, the organization's own host uid), so these
attacks find nothing to read and nobody to signal. Each program here runs through a real pydantic-ai agent
whose scripted model calls run_python, for two organizations.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from capabilities.code_execution import identity, sandbox
from tests.capabilities.helpers import deps, run, spec
from tests.sandbox.sandboxd_server import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.django_db(transaction=True)]
CODE = spec({"id": "code_execution", "config": {"timeout_secs": 8, "max_memory_mb": 128}})
ORG_A, ORG_B = str(uuid.uuid4()), str(uuid.uuid4())
SECRET = "org-b-attachment-secret-7f3a"


@pytest.fixture
def other_orgs_file(tmp_path_factory) -> Path:
    """A file of organization B's on the host, readable by any local user (as an attachment under MEDIA_ROOT is)."""
    folder = tmp_path_factory.mktemp("media") / "org-b" / "attachments"
    folder.mkdir(parents=True)
    for parent in [folder, *folder.parents]:
        if str(parent) in ("/", "/tmp"):  # noqa: S108
            break
        os.chmod(parent, 0o755)  # noqa: S103 - the point: the host's permissions would let anyone read it
    secret = folder / "contract.txt"
    secret.write_text(SECRET)
    os.chmod(secret, 0o644)
    return secret


async def _python(code: str, organization_id: str) -> str:
    outcome = await run(CODE, [("run_python", {"code": code})], deps(organization_id=organization_id))
    return "\n".join(str(x) for x in [*outcome.returns, *outcome.retries])


# The cwd is 12 folders deep, so `../` × 12 is the scratch folder itself as seen from the cwd (what the old hook
# checked), and the host's root as seen from `fd` (what the kernel opens): the scratch folder is less than 12 deep.
ESCAPE = """
import os
deep = '/'.join('d' * 12)
os.makedirs(deep, exist_ok=True)
fd = os.open('.', os.O_RDONLY)
os.chdir(deep)
up = '../' * 12
found = []
for target in ({secret!r}, '/work/main/.agenticos/services.env', '/etc/shadow'):
    try:
        handle = os.open(up + target.lstrip('/'), os.O_RDONLY, dir_fd=fd)
        found.append(os.read(handle, 200).decode(errors='replace'))
    except OSError as exc:
        found.append(type(exc).__name__)
try:
    root = os.open(up, os.O_RDONLY, dir_fd=fd)
    found.append(sorted(os.listdir(root)))
except OSError as exc:
    found.append(type(exc).__name__)
print(found)
"""


async def test_the_dir_fd_escape_reads_no_other_organizations_file_and_lists_nothing_of_the_host(other_orgs_file):
    answer = await _python(ESCAPE.format(secret=str(other_orgs_file)), ORG_A)
    assert SECRET not in answer
    assert "root:" not in answer and "VAULT" not in answer and "SECRET_KEY" not in answer
    # What the jail's root holds, if the listing got through at all: its own few folders, nothing of the host's.
    for host_only in ("'work'", "'root'", "'home'", "'var'", "'data'", "'srv'", "'opt'"):
        assert host_only not in answer, answer


async def test_a_program_cannot_plant_a_file_another_organizations_next_program_reads():
    planted = await _python(
        "import os\nfd = os.open('.', os.O_RDONLY)\ndeep = '/'.join('d' * 12)\nos.makedirs(deep, exist_ok=True)\n"
        "os.chdir(deep)\n"
        "try:\n    h = os.open('../' * 12 + 'tmp/planted-by-a', os.O_WRONLY | os.O_CREAT, dir_fd=fd)\n"
        "    os.write(h, b'from a')\n    print('wrote')\nexcept OSError as exc:\n    print(type(exc).__name__)",
        ORG_A,
    )
    read = await _python("import os\nprint(sorted(os.listdir('.')), os.path.exists('/tmp/planted-by-a'))", ORG_B)
    assert "['main.py'] False" in read, (planted, read)
    assert not Path("/tmp/planted-by-a").exists(), planted  # noqa: S108 - nothing reached the host's /tmp


async def test_a_program_cannot_signal_another_organizations_program():
    victim = asyncio.create_task(_python("import time\ntime.sleep(3)\nprint('survived')", ORG_B))
    await asyncio.sleep(1.0)
    attack = await _python(
        "import os, signal\nmine = {os.getpid(), os.getpgrp(), 1}\nhit = []\n"
        "for pid in range(1, 32768):\n"
        "    if pid in mine:\n        continue\n"
        "    for call in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)):\n"
        "        try:\n            call()\n            hit.append(pid)\n        except OSError:\n            pass\n"
        "print('reached', sorted(set(hit)))",
        ORG_A,
    )
    assert "survived" in await victim, attack
    assert "reached []" in attack, attack  # its own PID namespace holds nobody else to signal


async def test_each_organization_runs_as_a_host_uid_of_its_own():
    uid_a, uid_b = await asyncio.to_thread(identity.host_uid, ORG_A), await asyncio.to_thread(identity.host_uid, ORG_B)
    assert uid_a != uid_b and min(uid_a, uid_b) > settings.RUN_PYTHON_UID_BASE
    if os.geteuid() != 0:
        pytest.skip("not root: every organization's programs run as this process's uid")
    # While A's program sleeps, the host sees its processes as A's uid, and nothing of it as root or B's.
    running = asyncio.create_task(_python("import time\ntime.sleep(2)\nprint('done')", ORG_A))
    owners: set[int | None] = set()
    for _ in range(40):
        await asyncio.sleep(0.1)
        owners = {_uid(pid) for pid in os.listdir("/proc") if pid.isdigit() and "run_python_" in _cmdline(pid)}
        if owners:
            break
    assert "done" in await running
    assert owners == {uid_a}, owners


def _uid(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_without_bubblewrap_there_is_no_unjailed_path(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, path=None: None)
    with pytest.raises(sandbox.Unavailable):
        sandbox.run_program("print(1)", timeout_secs=5, max_memory_mb=64, uid=settings.RUN_PYTHON_UID_BASE + 1)
