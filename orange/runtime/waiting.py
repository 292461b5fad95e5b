"""Which agents of this host wait for a person on a known screen, as the monitor last
looked (`orange.monitor.agentscreens`).

One small JSON file a task, ``$ORANGE_HOME/waiting/<host>/<project>/<task id>``: the
pane and its output time (tmux's ``window_activity``) when the monitor last read it,
the screen it showed (empty: none known) and the ``attention`` the monitor set for it.
A pane whose output has not changed since it was read is not read again, so an agent
idle for hours costs one capture, not one a pass.  `task list` and the dashboard show a
task whose file names a screen as waiting.  Never a commit on the ref: it is one host's
passing state, like a worktree being set up (`orange.runtime.settingup`).

A mark set by a harness's own signal (Claude Code's Notification hook,
`orange.monitor.notified`) is cleared only by evidence that the agent moved on: its
pane replaced, its task moved, or a new entry from the person's side in its transcript
(`answered`).  Reading the pane is no such evidence: the hook may run while the prompt
is still being drawn, and the finished drawing is no answer.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
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
    # Set when a harness's own hook said the agent waits (0: marked by reading the
    # pane): when (seconds since the epoch), the task's status then, and the agent's
    # transcript with its length then ("": none given).
    since: float = 0.0
    status: str = ""
    transcript: str = ""
    offset: int = 0


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
        look = Look(**{k: v for k, v in data.items() if k in Look._fields})
    except (OSError, ValueError, TypeError):
        return None
    texts = (look.task, look.window, look.pane, look.screen, look.attention, look.status)
    if look.task != task_id or not all(isinstance(t, str) for t in (*texts, look.transcript)):
        return None
    numbers = type(look.activity) is int and type(look.offset) is int
    return look if numbers and isinstance(look.since, (int, float)) else None


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


MAX_ANSWER = 1024 * 1024  # bytes of transcript read after a mark; more is an answer


def answered(look: Look) -> bool:
    """Whether the agent's transcript (Claude Code's session file: one JSON entry a
    line, each with its ``type`` and ISO ``timestamp``) holds, past the length it had
    when the mark was set, an entry from the person's side (``user``: a reply, a
    permission given or refused, an interrupt) stamped after the mark.  Entries the
    program wrote late, from before the mark, are no answer."""
    if not look.transcript or not look.since:
        return False
    try:
        # Never blocks: a path swapped for a FIFO since the mark opens and is no file.
        fd = os.open(look.transcript, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        os.lseek(fd, look.offset, os.SEEK_SET)
        tail = os.read(fd, MAX_ANSWER + 1)
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(tail) > MAX_ANSWER:
        return True  # a whole conversation written since: it went on
    for line in tail.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line still being written
        if isinstance(entry, dict) and entry.get("type") == "user":
            stamp = _epoch(entry.get("timestamp"))
            if stamp is not None and stamp > look.since:
                return True
    return False


def _epoch(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
