"""Undoing this host's own bindings of a task, for a cancel that runs no hooks.

A human's cancel of a task whose workflow definition is not trusted here moves it to
its cancelled state without any of that definition's hooks (DESIGN §8); what this host
itself started for the task must still stop.  Only bindings this host's Orange made
and recorded locally count (`orange.hooks.unbind.release_local`): runtime fields that
arrived in the ref (``host``, ``workspace``, ``tmux_session``) are never enough to kill
or remove anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orange.errors import OrangeError
from orange.hooks.unbind import release_local

if TYPE_CHECKING:
    from orange.engine.engine import Engine
    from orange.store.task import Task


def release_recorded_bindings(engine: Engine, task: Task, *, force: bool) -> list[str]:
    """Kill ``task``'s recorded tmux session and release its recorded worktree on this
    host; what was done, one line each.  The cancel is already committed: a refusal
    (unsaved work without ``--force``) is said, and the worktree stays bound."""
    if engine.project is None:
        return []
    try:
        return release_local(engine.project, task, force=force)
    except OrangeError as exc:
        return [f"warning: kept this host's worktree of task {task.id}: {exc}"]
