"""An advisory lock serialising this machine's writers of ``refs/orange/*``.

``fcntl.flock`` is released by the kernel when the holder dies, so a writer killed in
the middle of a write never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def attempt(path: Path) -> Iterator[bool]:
    """Like `exclusive`, without waiting: yields whether the lock was taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
