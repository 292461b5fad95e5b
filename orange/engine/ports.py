"""What the engine needs from the runtime, as protocols: the composition root
(`orange.compose`) hands it implementations from `orange.hooks`."""

from __future__ import annotations

from typing import Protocol

from orange.store.task import Task


class WorkingCopies(Protocol):
    """The agent's TASK.md working copy in its worktree (provided by the runtime)."""

    def take_in(self, task: Task) -> tuple[str, bool] | None:
        """(body to commit: the working copy merged with the ref, had a conflict), or
        None when the task has no working copy here."""

    def after_write(self, task: Task) -> None:
        """Bring the working copy up to date with the committed task."""


class AgentProbe(Protocol):
    def is_alive(self, task: Task, agent: str) -> bool:
        """Whether the task's agent (``worker`` or ``reviewer`` window) is running."""
