"""Undoing this host's own bindings of a task, for a cancel that runs no hooks.

A human's cancel of a task whose workflow definition is not trusted here moves it to
its cancelled state without any of that definition's hooks (DESIGN §8); what this host
itself started for the task must still stop.  Only bindings this host's Orange made
and recorded locally count: runtime fields that arrived in the ref (``host``,
``workspace``, ``tmux_session``) are never enough to kill or remove anything.

The local binding records (worktree ↔ task, tmux session ↔ task) are another change's
work; until they exist there is nothing this host recorded, and this does nothing.
That change fills in `release_recorded_bindings`: kill the recorded session, release
the recorded worktree (never losing work), drop the records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orange.engine.engine import Engine
    from orange.store.task import Task


def release_recorded_bindings(engine: Engine, task: Task) -> list[str]:
    """Kill ``task``'s recorded tmux session and release its recorded worktree on this
    host; what was done, one line each (nothing while no records exist)."""
    del engine, task  # no local binding records yet: nothing of ours to undo
    return []
