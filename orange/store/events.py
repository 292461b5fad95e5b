"""Commits are the history: a readable subject plus ``Orange-*`` trailers (DESIGN §2)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

ACTORS = ("cli", "agent", "monitor", "git-hook", "sync")
_TRAILER = re.compile(r"^(Orange-[A-Za-z-]+): (.*)$")


@dataclass(frozen=True)
class Change:
    """What one commit does: files to write (None deletes) and what to say about it.

    `TaskStore.commit` hands back the change its compute function returned, with
    ``commit`` set to the new commit (None when there was nothing to write: no
    ``writes``, or a tree equal to the tip's).  A caller that needs more than that
    back subclasses it with keyword-only fields (the engine's decided moves do), so
    no result travels out of the compute function by any other way.
    """

    task_id: str
    event: str
    subject: str
    writes: Mapping[str, bytes | None]
    trailers: Sequence[tuple[str, str]] = field(default_factory=tuple)
    actor: str | None = None
    commit: str | None = None


def default_actor() -> str:
    """Who is writing: ``ORANGE_ACTOR`` if set, an agent inside a task, else the CLI."""
    actor = os.environ.get("ORANGE_ACTOR", "")
    if actor in ACTORS:
        return actor
    return "agent" if os.environ.get("ORANGE_TASK_ID") else "cli"


def message(change: Change) -> str:
    lines = [
        f"Orange-Task: {change.task_id}",
        f"Orange-Event: {change.event}",
        f"Orange-Actor: {change.actor or default_actor()}",
    ]
    lines += [f"{key}: {_one_line(value)}" for key, value in change.trailers]
    return f"{_one_line(change.subject)}\n\n" + "\n".join(lines) + "\n"


def parse_trailers(text: str) -> dict[str, str]:
    """The ``Orange-*`` trailers of a commit message (last value wins)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _TRAILER.match(line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
