"""Where things live in the tree of ``refs/orange/tasks`` (DESIGN §2)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha1
else:
    try:  # CPython's own SHA-1: importing hashlib loads OpenSSL, 1 % of an agent's update
        from _sha1 import sha1
    except ImportError:  # another Python
        from hashlib import sha1

TASKS_REF = "refs/orange/tasks"
SNAPSHOTS_PREFIX = "refs/orange/snapshots"
SCHEMA_PATH = "meta/schema"
WORKFLOWS_DIR = "meta/workflows"
SCHEMA_VERSION = 1

_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_ID_CHARS = f"{_ID_ALPHABET}_-"
ID_LENGTH = 8


def valid_task_id(task_id: str) -> bool:
    """Ids are url-safe and cannot escape their directory: ``[0-9a-z][0-9a-z_-]{0,63}``.

    String tests, not a regular expression (compiled by every command that reads a
    task).  They take what ``re.match("^[0-9a-z][0-9a-z_-]{0,63}$", task_id)`` did,
    whose ``$`` also matches before a final line feed."""
    text = task_id[:-1] if task_id[-1:] == "\n" else task_id
    return 0 < len(text) <= 64 and text[0] in _ID_ALPHABET and not text.strip(_ID_CHARS)


def new_task_id() -> str:
    """Eight characters from the OS's random source, each uniform over the alphabet."""
    usable = 256 - 256 % len(_ID_ALPHABET)  # bytes above this would favour some letters
    chars: list[str] = []
    while len(chars) < ID_LENGTH:
        chars += [_ID_ALPHABET[b % len(_ID_ALPHABET)] for b in os.urandom(16) if b < usable]
    return "".join(chars[:ID_LENGTH])


def shard(task_id: str) -> str:
    return sha1(task_id.encode()).hexdigest()[:2]


def task_dir(task_id: str) -> str:
    return f"tasks/{shard(task_id)}/{task_id}"


def task_path(task_id: str) -> str:
    return f"{task_dir(task_id)}/TASK.md"


def workflow_path(name: str) -> str:
    return f"{WORKFLOWS_DIR}/{name}.yml"
