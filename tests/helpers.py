"""Small test helpers shared across packages."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

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
