"""Runs INSIDE the sandboxed child (its source is passed with `python -I -S -c`), never imported here.

argv: <workdir> <cpu_seconds> <memory_bytes>. Reads <workdir>/main.py and runs it as __main__.

Order matters: lower the rlimits (hard = soft, so the program cannot raise them back), then install the
audit hook (it cannot be removed once installed), then run the program. The audit hook is a tripwire,
not the wall: the walls are the network namespace, the unprivileged uid and the rlimits, set up by the
parent where the host allows them. The hook is what still stands where it does not (no `unshare`,
not root), and it turns "no network / no writes outside the work dir" into a clear PermissionError.
"""

import ast
import os
import resource
import sys
import traceback

WORKDIR = os.path.realpath(sys.argv[1])
CPU_SECONDS = int(sys.argv[2])
MEMORY_BYTES = int(sys.argv[3])
FILE_BYTES = 16 * 1024 * 1024
MARK = "\x00sandbox:"  # lines the parent reads; a program cannot print a NUL by accident

for limit, value in (
    (resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1)),
    (resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES)),
    (resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES)),
    (resource.RLIMIT_NOFILE, (64, 64)),
    (resource.RLIMIT_CORE, (0, 0)),
    (resource.RLIMIT_NPROC, (0, 0)),
):
    try:
        resource.setrlimit(limit, value)
    except (ValueError, OSError):
        pass

with open(os.path.join(WORKDIR, "main.py"), encoding="utf-8") as handle:
    SOURCE = handle.read()

READ_ROOTS = tuple(
    os.path.realpath(p)
    for p in [*sys.path, os.path.dirname(sys.executable), "/usr/share/zoneinfo", "/dev/null", "/dev/urandom"]
    if p
)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _inside(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def _refuse(what):
    raise PermissionError(f"sandbox: {what} is not allowed in run_python")


def _path(value):
    if isinstance(value, int) or value is None:
        return None
    return os.path.realpath(os.fsdecode(value))


BLOCKED = {
    "socket.__new__": "network access",
    "socket.connect": "network access",
    "socket.bind": "network access",
    "socket.getaddrinfo": "network access",
    "subprocess.Popen": "starting a process",
    "os.system": "starting a process",
    "os.exec": "starting a process",
    "os.posix_spawn": "starting a process",
    "os.spawn": "starting a process",
    "os.fork": "starting a process",
    "os.forkpty": "starting a process",
    "os.kill": "signalling a process",
    "ctypes.dlopen": "loading native code",
    "ctypes.dlsym": "loading native code",
}
PATH_WRITES = {
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.rename",
    "os.chmod",
    "os.chown",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.utime",
    "shutil.rmtree",
}


def _hook(event, args):
    if event in BLOCKED:
        _refuse(BLOCKED[event])
    if event == "import" and args and str(args[0]).split(".")[0] in {"ctypes", "_ctypes"}:
        _refuse("loading native code")
    if event == "open":
        path = _path(args[0])
        if path is None:
            return
        mode, flags = args[1] or "", args[2] or 0
        writing = any(c in mode for c in "wax+") or bool(flags & WRITE_FLAGS)
        if writing and not _inside(path, WORKDIR):
            _refuse(f"writing {path} (only the working directory is writable)")
        if not writing and not _inside(path, WORKDIR) and not any(_inside(path, r) for r in READ_ROOTS):
            _refuse(f"reading {path} (there is no file system beyond the working directory)")
    elif event in PATH_WRITES:
        for arg in args[:2]:
            path = _path(arg) if isinstance(arg, str | bytes | os.PathLike) else None
            if path is not None and not _inside(path, WORKDIR):
                _refuse(f"changing {path} (only the working directory is writable)")
    elif event in {"os.listdir", "os.scandir"}:
        path = _path(args[0]) if args and args[0] is not None else WORKDIR
        if path is not None and not _inside(path, WORKDIR) and not any(_inside(path, r) for r in READ_ROOTS):
            _refuse(f"listing {path}")


def _report(exc):
    # Keep only the program's own frames: the bootstrap is noise to the model.
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "main.py"]
    text = "Traceback (most recent call last):\n" if frames else ""
    text += "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(exc), exc))
    sys.stderr.write(text)
    sys.stderr.flush()
    sys.stdout.flush()
    refused = isinstance(exc, PermissionError) and str(exc).startswith("sandbox:")
    kind = "refused" if refused else type(exc).__name__
    os.write(2, f"\n{MARK}{kind}\n".encode())


def main():
    try:
        tree = ast.parse(SOURCE, filename="main.py")
    except SyntaxError as exc:
        _report(exc)
        os._exit(3)
    # Like a REPL: a trailing expression's value is printed, so "2**100" answers without print().
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.addaudithook(_hook)
    try:
        exec(compile(tree, "main.py", "exec"), scope)  # noqa: S102 - running the model's program is the point
        if last is not None:
            value = eval(compile(last, "main.py", "eval"), scope)  # noqa: S307
            if value is not None:
                print(repr(value))
    except SystemExit as exc:
        sys.stdout.flush()
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(str(exc.code) + "\n")
        sys.stderr.flush()
        os._exit(code)
    except BaseException as exc:  # noqa: BLE001 - every failure of the program is reported, not raised
        _report(exc)
        os._exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


main()
