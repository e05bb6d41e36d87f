"""code_execution: run_python in a locked-down subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from capabilities.code_execution import sandbox
from capabilities.code_execution.capability import CodeExecutionConfig
from tests.capabilities.helpers import run, spec
from tests.sandbox.sandboxd_server import needs_bwrap

# run_python gives each organization its own host uid, read from (and first written to) the database.
pytestmark = [needs_bwrap, pytest.mark.django_db(transaction=True)]

CODE = spec({"id": "code_execution", "config": {"timeout_secs": 3, "max_memory_mb": 128}})


async def _run_python(code: str, the_spec=CODE):
    return await run(the_spec, [("run_python", {"code": code})])


async def test_it_prints_and_shows_a_trailing_expression_like_a_repl():
    outcome = await _run_python("import math\nprint(math.comb(10, 3))\n2**70")
    assert outcome.returns == ["120\n1180591620717411303424\n"]


async def test_a_name_error_in_the_models_code_is_a_retry_with_the_traceback():
    outcome = await _run_python("x = undefined_name + 1")
    assert "raised NameError" in outcome.retries[0]
    assert "name 'undefined_name' is not defined" in outcome.retries[0]
    assert 'File "main.py", line 1' in outcome.retries[0]


async def test_the_network_is_refused_and_not_retried():
    outcome = await _run_python("import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=2)")
    assert outcome.retries == []
    assert outcome.returns[0].startswith("Refused:") and "no network" in outcome.returns[0]


async def test_writing_outside_the_scratch_directory_is_refused(tmp_path: Path):
    target = tmp_path / "escape.txt"
    outcome = await _run_python(f"open({str(target)!r}, 'w').write('x')")
    assert outcome.returns[0].startswith("Refused:")
    assert not target.exists()


async def test_reading_the_hosts_files_is_refused():
    outcome = await _run_python("print(open('/etc/hostname').read())")
    assert outcome.returns[0].startswith("Refused:")


async def test_starting_a_process_is_refused():
    outcome = await _run_python("import subprocess\nsubprocess.run(['id'])")
    assert outcome.returns[0].startswith("Refused:")


async def test_the_scratch_directory_is_writable_and_the_environment_holds_no_secrets():
    outcome = await _run_python(
        "open('notes.txt', 'w').write('kept')\nimport os\nprint(open('notes.txt').read(), sorted(os.environ))"
    )
    assert outcome.returns[0] == "kept ['HOME', 'LANG', 'PATH', 'PWD', 'TMPDIR']\n"  # PWD: bwrap's --chdir


async def test_an_endless_loop_is_stopped_at_the_time_limit_and_retried():
    outcome = await _run_python("while True:\n    pass")
    assert "ran past the time limit of 3 seconds" in outcome.retries[0]


async def test_a_sleeping_program_is_stopped_by_the_wall_clock():
    outcome = await _run_python("import time\ntime.sleep(60)")
    assert "time limit" in outcome.retries[0]


async def test_a_program_past_the_memory_cap_is_retried_naming_the_cap():
    outcome = await _run_python("block = bytearray(512 * 1024 * 1024)")
    assert "memory limit of 128 MB" in outcome.retries[0]


async def test_output_is_cut_at_8000_characters_with_a_visible_marker():
    outcome = await _run_python("print('x' * 20000)")
    text = outcome.returns[0]
    assert text.startswith("x" * 8000)
    assert "…[output truncated: 12001 more characters not shown]" in text
    assert len(text) < 8100


async def test_a_flood_of_output_is_not_read_into_memory_whole():
    outcome = await _run_python("import sys\nfor _ in range(2000):\n    sys.stdout.write('y' * 1000)")
    assert "more characters not shown" in outcome.returns[0]


async def test_a_non_zero_exit_is_bad_news_returned_as_the_result():
    outcome = await _run_python("print('partial')\nraise SystemExit(4)")
    assert outcome.retries == []
    assert outcome.returns[0].startswith("The program exited with code 4.")
    assert "partial" in outcome.returns[0]


async def test_a_second_failing_attempt_returns_the_traceback_instead_of_ending_the_run():
    outcome = await run(CODE, [("run_python", {"code": "1/0"}), ("run_python", {"code": "1/0"})])
    assert len(outcome.retries) == 1
    assert "ZeroDivisionError" in outcome.returns[0]
    assert outcome.output == "done"


def test_the_audit_hook_alone_still_refuses_the_network_and_writes_outside(tmp_path):
    # The bootstrap run with no jail at all (never how run_python runs it): its hook is the tripwire that turns
    # an attempt into a readable refusal, so it must refuse on its own.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    escape = tmp_path / "run_python_escape_probe"
    for code in ("import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=2)",
                 f"open({str(escape)!r}, 'w')"):
        (scratch / "main.py").write_text(code)
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-I", "-S", "-B", "-c", sandbox.BOOTSTRAP, str(scratch), "5", str(128 * 1024 * 1024)],
            capture_output=True, text=True, timeout=30, check=False,
        )
        assert done.stderr.rstrip().endswith(sandbox.MARK + "refused"), done.stderr
    assert not escape.exists()


CONNECT_PROBE = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("connected")
except OSError as exc:
    print("unreachable", exc.errno)
"""


@needs_bwrap
def test_in_the_jail_the_child_has_no_network_interface_to_use(tmp_path):
    # The jail's argv without the bootstrap's audit hook (the probe replaces it): a connect to a listener this
    # test holds open on the host's loopback must fail. The same probe outside reaches it, so the failure is the
    # network namespace's doing.
    python = sandbox.interpreter()
    assert python is not None
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = str(listener.getsockname()[1])
        outside = subprocess.run([python, "-I", "-S", "-c", CONNECT_PROBE, port], capture_output=True, text=True,  # noqa: S603
                                 timeout=30, check=False)
        argv = sandbox.command(python, timeout_secs=5, max_memory_mb=128, scratch=str(tmp_path))
        jailed = argv[: argv.index("-c") + 1] + [CONNECT_PROBE, port]
        inside = subprocess.run(jailed, capture_output=True, text=True, timeout=30, check=False)  # noqa: S603
    assert outside.stdout.strip() == "connected", outside.stderr
    assert inside.returncode == 0 and inside.stdout.startswith("unreachable"), (inside.stdout, inside.stderr)


def test_the_limits_are_bounded_as_the_catalog_says():
    assert CodeExecutionConfig().timeout_secs == 10 and CodeExecutionConfig().max_memory_mb == 256
    for bad in ({"timeout_secs": 0}, {"timeout_secs": 121}, {"max_memory_mb": 15}, {"max_memory_mb": 4097}):
        with pytest.raises(ValueError):
            CodeExecutionConfig(**bad)


@pytest.mark.parametrize(("signal_name", "status"), [("SIGXCPU", "timeout"), ("SIGKILL", "timeout"),
                                                     ("SIGSEGV", "crashed")])
def test_a_program_killed_by_a_signal_is_read_as_such_through_the_jail(signal_name, status):
    # The CPU limit's SIGXCPU reaches the jail's parent as bwrap's exit code 128 + N: it is the time limit (a retry
    # asking for less work), not a program that chose to exit 152. Raised here directly, so no clock decides which
    # limit came first.
    outcome = sandbox.run_program(f"import signal\nsignal.raise_signal(signal.{signal_name})", timeout_secs=5,
                                  max_memory_mb=128, uid=settings.RUN_PYTHON_UID_BASE + 999_999)
    assert outcome.status == status, outcome
