"""What the engine is handed besides its actions: the agents' TASK.md working copies
(`LocalCopies`) and whether an agent is alive (`TmuxProbe`).

Both answer at once for a task this host has no worktree or session for (most moves an
agent makes from its own pane still pass here first): git and tmux, driven through
subprocess, load only when there is a worktree or session to look at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from orange.runtime import bindings
from orange.runtime.bindings import session_of, workspace_of
from orange.runtime.places import agent_window
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.ledger import Usage
    from orange.engine.ports import WorkingCopies
    from orange.runtime.tmux import Tmux


class TmuxProbe:
    """Is the agent of the task's current state running? (DESIGN §5)  ``tmux`` gives the
    process's tmux adapter (`orange.compose.tmux`), asked for only for a session this
    host started: a move of any other task never loads it.  Which agent run did this
    host start, and which death did it handle (its binding record)?"""

    def __init__(self, tmux: Callable[[], Tmux]) -> None:
        self._tmux = tmux

    def is_alive(self, task: Task, agent: str) -> bool:
        session = session_of(task)  # only a session this host started (DESIGN §8)
        if not session:
            return False
        window = agent_window(task, agent)
        pane = self._tmux().pane(session, window)
        return pane is not None and not pane.dead

    def started(self, task: Task) -> tuple[str, str] | None:
        if session_of(task) is None:
            return None
        record = bindings.read(task.project, task.id)
        return None if record is None or not record.run else (record.run, record.dead)

    def handled(self, task: Task, death: str) -> None:
        bindings.record(task.project, task.id, dead=death)


class LocalCopies:
    """`orange.runtime.workcopy.RuntimeCopies` for a task with a worktree on this host;
    nothing to keep in step for any other."""

    def take_in(self, task: Task) -> tuple[str, bool] | None:
        if workspace_of(task) is None:
            return None
        return _copies().take_in(task)

    def after_write(self, task: Task) -> None:
        if workspace_of(task) is not None:
            _copies().after_write(task)


def _copies() -> WorkingCopies:
    # The working copy drives git (subprocess, tempfile): loaded only for a worktree.
    from orange.runtime.workcopy import RuntimeCopies

    return RuntimeCopies()


class LocalUsage:
    """`orange.runtime.usage.LocalUsage` for a task with a worktree on this host; no
    usage to read for any other (the readers load only for a worktree)."""

    def read(self, task: Task, since: str, until: str) -> Usage | None:
        if workspace_of(task) is None:
            return None
        from orange.runtime.usage import LocalUsage as Reader

        return Reader().read(task, since, until)
