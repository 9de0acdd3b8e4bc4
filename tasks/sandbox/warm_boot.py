"""The warm process of one state: what runs INSIDE that state's sandbox (tasks/sandbox/warm.py
starts it; the design and its limits are in SECURITY.md, "Warm states").

Standard library only, and not imported by the harness: warm.py hands this file's text to
the environment's own interpreter (`python -c`), which has no testprism installed.

What it does, in order:
1. tells the harness its pid on its control socket (SCM_CREDENTIALS: the kernel translates
   it) and waits for a go: the harness first notes what a clean warm process holds (its
   descriptors, mounts, processes), to compare once the program has run;
2. as `python -m pytest` would start (sys.path[0] the program folder), imports pytest, its
   built-in plugins and the program's top-level packages named on its command line (the
   harness derived them from the state's tree), and reports what it imported from the
   program (the harness's import-order check reads those files from the state's own tree)
   or why it could not;
3. reads its control socket, where nothing ever comes: the harness stops it there for good
   (tasks/sandbox/inject.py) and never lets it run again. Each run is a clone the harness
   makes of it by injected system calls, set up (namespaces, mounts, cgroup, capabilities,
   seccomp, descriptors, limits) before any instruction of the clone's own runs, then let go
   where this process stopped: in that read, which now reads the run's request from the
   descriptor the harness put in the control socket's place;
4. the run (`_run`): exactly the run's variables, `sys.argv` as `python -m pytest` has it,
   then pytest's `__main__` run as `-m` runs it (runpy), and the interpreter's normal exit
   (atexit handlers, flushes) as a cold run's.
This code is the program's to rewrite once the import ran, and that changes nothing the
harness relies on: every defence is in place before the clone runs an instruction.
"""

import json
import os
import socket
import struct
import sys


def _preload(packages):
    """Import what every run of this state imports first; returns the program files loaded."""
    sys.path[0] = os.getcwd()  # as `python -m` sets it (-c would put '')
    import importlib

    import pytest  # noqa: F401
    from _pytest.config import default_plugins
    for name in default_plugins:
        importlib.import_module("_pytest." + name)
    for package in packages:
        importlib.import_module(package)
    program = os.getcwd() + os.sep
    return sorted({f for m in list(sys.modules.values())
                   if isinstance(f := getattr(m, "__file__", None), str) and f.startswith(program)})


def _run(request):
    """A clone's part (module docstring, 4): its descriptors (stdin, stdout+stderr), working
    folder and limits are the harness's doing already. Returns only by SystemExit, as
    `python -m pytest` ends."""
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.orig_argv = list(request["orig_argv"])
    import runpy
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)  # as `-m` runs it: it raises SystemExit
    return 0


def main():
    control = socket.socket(fileno=int(sys.argv[1]))
    packages = json.loads(sys.argv[2])
    creds = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
    control.sendmsg([b"booted"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
    if control.recv(16) != b"go":
        os._exit(0)
    try:
        files = _preload(packages)
        from importlib.metadata import entry_points
        plugins = sorted(ep.name for ep in entry_points(group="pytest11"))
    except BaseException as exc:  # noqa: BLE001 - the program's import failed: this state runs cold
        control.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        os._exit(0)
    control.send(json.dumps({"files": files, "plugins": plugins}).encode())
    sys.stdout.flush()
    sys.stderr.flush()
    fd = control.fileno()
    # the warm process stops here for good; a run's clone resumes here, reading its request
    data = os.read(fd, 1 << 22)
    if not data:  # the harness closed the control socket before stopping it: nothing to serve
        os._exit(0)
    os.close(fd)
    return _run(json.loads(data))


if __name__ == "__main__":
    raise SystemExit(main())
