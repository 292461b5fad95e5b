"""Small test helpers shared across packages."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")


def retry_until(
    fn: Callable[[], T | Literal[False] | None],
    timeout: float = 5,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Call ``fn`` until it returns something truthy; return that, or fail after
    ``timeout`` seconds naming ``what`` and the last value (poll, never sleep blindly).
    The tests' one retry helper."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not met within {timeout}s (last value: {value!r})")
        time.sleep(interval)
