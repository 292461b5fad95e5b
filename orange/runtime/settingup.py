"""Which tasks are having their worktree made ready on this host, right now.

A worktree's setup commands run after its slot is chosen and before the move that binds
it is committed, outside the store's lock (`orange.engine.actions.NotReady`): nothing in
the ref says the slot is taken yet.  So the process running the setup leaves a local
marker, ``$ORANGE_HOME/setting-up/<host>/<project>/<task id>``, naming the slot and its
own process id.  While that process lives, the slot counts as held (the pool's
`holders`) and `task list` shows the task as setting up; a marker whose process is gone
(a crash, a kill) counts for nothing, so it never holds a slot for ever.  Never a commit
on the ref: it is one host's passing state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from orange.home import host_name, orange_home
from orange.store.files import replace_file
from orange.store.layout import valid_task_id


class Mark(NamedTuple):  # not a dataclass: read by `task list` (see engine.workflow)
    """One task's slot being made ready; ``ready`` once its setup succeeded (the move's
    commit is then still to come)."""

    task: str
    workspace: str
    pid: int
    ready: bool = False


def _safe(name: str) -> str:
    cleaned = name.replace(os.sep, "_").replace("\0", "_")
    return cleaned if cleaned not in ("", ".", "..") else f"_{cleaned}_"


def folder(project: str) -> Path:
    return orange_home() / "setting-up" / _safe(host_name()) / _safe(project)


def write(project: str, mark: Mark) -> None:
    if not valid_task_id(mark.task):
        return
    folder(project).mkdir(parents=True, exist_ok=True)
    replace_file(folder(project) / mark.task, json.dumps(mark._asdict()))


def clear(project: str, task_id: str) -> None:
    if valid_task_id(task_id):
        (folder(project) / task_id).unlink(missing_ok=True)


def read(project: str, task_id: str) -> Mark | None:
    """The task's marker while its process lives; None otherwise."""
    if not valid_task_id(task_id):
        return None
    try:
        data = json.loads((folder(project) / task_id).read_bytes())
        mark = Mark(data["task"], data["workspace"], data["pid"], data["ready"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if mark.task != task_id or not isinstance(mark.workspace, str):
        return None
    if type(mark.pid) is not int or not _alive(mark.pid):
        return None
    return mark


def live(project: str) -> list[Mark]:
    """Every live marker of ``project`` (one directory listing when there is none)."""
    try:
        names = sorted(p.name for p in folder(project).iterdir() if not p.name.startswith("."))
    except OSError:
        return []
    found = (read(project, name) for name in names)
    return [mark for mark in found if mark is not None]


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True
