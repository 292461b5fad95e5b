"""Tasks running on another host (DESIGN §7): shown as ``running on HOST``, never
spawned, killed or respawned here.

Bound elsewhere means active, with a workspace, and a ``host`` other than this one: a
pending task's ``host`` alone means nothing.
"""

from __future__ import annotations

from orange.store.task import Task


def running_elsewhere(task: Task, *, active: bool, here: str) -> str | None:
    """The host the task runs on, if that is not ``here``."""
    host = task.str_field("host")
    if active and task.str_field("workspace") and host and host != here:
        return host
    return None
