"""Commits are the history: a readable subject plus ``Orange-*`` trailers (DESIGN §2)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Required, Self, TypedDict

ACTORS = ("cli", "agent", "monitor", "git-hook", "sync")
# Compiled when first needed (`re`'s cache): a write makes trailers, never reads them.
_TRAILER = r"^(Orange-[A-Za-z-]+): (.*)$"


class Change:
    """What one commit does: files to write (None deletes) and what to say about it.

    `TaskStore.commit` hands back the change its compute function returned, with
    ``commit`` set to the new commit (None when there was nothing to write: no
    ``writes``, or a tree equal to the tip's).  A caller that needs more than that
    back subclasses it with keyword-only fields (the engine's decided moves do), so
    no result travels out of the compute function by any other way.

    A plain class, not a dataclass: a dataclass is built by generated code in every
    process (about 5 M instructions each, 1 % of an agent's ``task update``).  Nothing
    assigns to a change once it is made; `with_commit` copies.
    """

    __slots__ = ("actor", "commit", "event", "subject", "task_id", "trailers", "writes")

    def __init__(
        self,
        task_id: str,
        event: str,
        subject: str,
        writes: Mapping[str, bytes | None],
        trailers: Sequence[tuple[str, str]] = (),
        actor: str | None = None,
        commit: str | None = None,
    ) -> None:
        self.task_id = task_id
        self.event = event
        self.subject = subject
        self.writes = writes
        self.trailers = trailers
        self.actor = actor
        self.commit = commit

    def with_commit(self, commit: str) -> Self:
        """A copy of this change (of its own class, every field kept) made as ``commit``."""
        copied = object.__new__(type(self))
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                setattr(copied, name, getattr(self, name))
        copied.commit = commit
        return copied

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.task_id!r}, {self.event!r}, commit={self.commit!r})"


class ChangeArgs(TypedDict, total=False):
    """`Change`'s arguments, for subclasses that add keyword-only fields."""

    task_id: Required[str]
    event: Required[str]
    subject: Required[str]
    writes: Required[Mapping[str, bytes | None]]
    trailers: Sequence[tuple[str, str]]
    actor: str | None
    commit: str | None


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
        match = re.match(_TRAILER, line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
