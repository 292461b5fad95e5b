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
    ``root`` or a path below it; this process is never one of them."""
    key = os.fsencode(str(root))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # gone, or not ours to read
        if state != "Z" and _refers_to(environ, cmdline, key):
            found.append(
                Proc(int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace").strip())
            )
    return found


def wait_gone(root: Path, timeout: float) -> list[Proc]:
    """Poll until no process refers to ``root``; those still there after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        left = processes_under(root)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def kill_all(procs: list[Proc]) -> None:
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
