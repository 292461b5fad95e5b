"""Which agents of this host wait for a person on a known screen, as the monitor last
looked (`orange.monitor.agentscreens`).

One small JSON file a task, ``$ORANGE_HOME/waiting/<host>/<project>/<task id>``: the
pane and its output time (tmux's ``window_activity``) when the monitor last read it,
the screen it showed (empty: none known) and the ``attention`` the monitor set for it.
A pane whose output has not changed since it was read is not read again, so an agent
idle for hours costs one capture, not one a pass.  `task list` and the dashboard show a
task whose file names a screen as waiting.  Never a commit on the ref: it is one host's
passing state, like a worktree being set up (`orange.runtime.settingup`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from orange.home import host_name, orange_home
from orange.store.files import replace_file
from orange.store.layout import valid_task_id


class Look(NamedTuple):  # not a dataclass: read by `task list` (see engine.workflow)
    """What the monitor saw of one task's agent: ``window`` (worker, review-N), tmux's
    ``pane`` id and ``activity`` stamp when it read it, the ``screen`` shown ("" none)
    and the ``attention`` it set for that screen ("" none); ``shown``, see below."""

    task: str
    window: str
    pane: str
    activity: int
    screen: str = ""
    attention: str = ""
    # What the pane showed when a harness's own hook said the agent waits (a digest of
    # its text; "": marked by reading the pane): the same text redrawn is still waiting.
    shown: str = ""


def _safe(name: str) -> str:
    cleaned = name.replace(os.sep, "_").replace("\0", "_")
    return cleaned if cleaned not in ("", ".", "..") else f"_{cleaned}_"


def folder(project: str) -> Path:
    return orange_home() / "waiting" / _safe(host_name()) / _safe(project)


def read(project: str, task_id: str) -> Look | None:
    if not valid_task_id(task_id):
        return None
    try:
        data = json.loads((folder(project) / task_id).read_bytes())
        look = Look(**data)
    except (OSError, ValueError, TypeError):
        return None
    texts = (look.task, look.window, look.pane, look.screen, look.attention, look.shown)
    if look.task != task_id or not all(isinstance(t, str) for t in texts):
        return None
    return look if type(look.activity) is int else None


def write(project: str, look: Look) -> None:
    if not valid_task_id(look.task):
        return
    folder(project).mkdir(parents=True, exist_ok=True)
    replace_file(folder(project) / look.task, json.dumps(look._asdict()))


def clear(project: str, task_id: str) -> None:
    if valid_task_id(task_id):
        (folder(project) / task_id).unlink(missing_ok=True)


def waiting(project: str) -> dict[str, str]:
    """The project's tasks whose agent waits on a known screen: id -> the screen's
    name (one directory listing when none was looked at)."""
    try:
        names = sorted(p.name for p in folder(project).iterdir() if not p.name.startswith("."))
    except OSError:
        return {}
    found = (read(project, name) for name in names)
    return {look.task: look.screen for look in found if look is not None and look.screen}
