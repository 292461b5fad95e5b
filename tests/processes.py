"""Finding the processes a test left running: every process whose environment or
command line points into the test's temp dir (its HOME and ORANGE_HOME live there, and
every process Orange, tmux or an agent starts for the test inherits them)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    pid: int
    cmdline: str

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.cmdline}"


def _points_into(value: bytes, root: bytes) -> bool:
    return value == root or value.startswith(root + b"/")


def _refers_to(environ: bytes, cmdline: bytes, root: bytes) -> bool:
    for entry in environ.split(b"\0"):
        _, eq, value = entry.partition(b"=")
        if eq and _points_into(value, root):
            return True
    return any(root + b"/" in arg or arg == root for arg in cmdline.split(b"\0"))


def processes_under(root: Path) -> list[Proc]:
    """Live processes (zombies aside) whose environment or command line refers to
    ``root`` or a path below it; this process is never one of them.  Every test's
    teardown scans the whole machine at least once, so the scan reads raw bytes and
    looks closer only at a process that names ``root`` somewhere."""
    key = os.fsencode(str(root))
    me = str(os.getpid())
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == me:
            continue
        try:
            environ = _read(f"/proc/{name}/environ")
            cmdline = _read(f"/proc/{name}/cmdline")
            if key not in environ and key not in cmdline:
                continue
            state = _read(f"/proc/{name}/stat").rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone, or not ours to read
        if state != b"Z" and _refers_to(environ, cmdline, key):
            found.append(
                Proc(int(name), cmdline.replace(b"\0", b" ").decode(errors="replace").strip())
            )
    return found


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def wait_gone(root: Path, timeout: float) -> list[Proc]:
    """Poll until no process refers to ``root``; those still there after ``timeout``.

    One scan is no snapshot: a process that starts another and exits while /proc is
    read (a tmux server killed with its agents starts its pane-died hooks as it goes)
    can leave that scan seeing neither, its child born after the listing.  So nothing
    is believed only when the next scan, begun after it, finds nothing either."""
    deadline = time.monotonic() + timeout
    empty = 0
    while True:
        left = processes_under(root)
        empty = 0 if left else empty + 1
        if empty == 2 or (left and time.monotonic() >= deadline):
            return left
        if left:  # the second look after an empty one needs no wait: it starts later
            time.sleep(0.05)


def kill_all(procs: list[Proc]) -> None:
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
