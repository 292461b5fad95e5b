"""Writing a small local file so that a reader sees the old content or the new, never
half of it: a temporary file of a unique name beside it, flushed to disk, renamed over."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(path: Path, text: str) -> None:
    """Make ``path`` hold ``text`` (UTF-8) atomically; the temporary never stays behind."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
