"""This host's queue: the tasks it may start on its own, in their order (DESIGN §8, §10).

``spawn_next`` starts a task of a workflow's queue state only if a human here asked
for it: the task was created on this host, or bound to it by a move this host made (a
human's ``orange task take`` or ``orange task spawn``, its claim won).  A teammate's
pending task that arrived by sync waits until someone takes it.

How this host knows, without trusting a pushed field: a local record, one task id a
line, appended by this host's Orange after its own commit created or bound the task,
in ``<git common dir>/orange/queue``.  Nothing in the ref can say it: ``host`` and
``created_at`` are fields anyone with push access may write, and so are a commit's
author, committer and dates.  "The task's creating commit is one this host wrote"
needs a local list of those commits anyway (git keeps no reflog for
``refs/orange/*`` unless told to, and a reflog expires), so the record names the
tasks themselves.  Next to the clone, because it is about this clone's ref; never
fetched or pushed.

The queue's order is the record's: the order the tasks entered this clone's ref (a
task created here enters it when its creating commit does; one bound here, when a
human here took it), never ``created_at``.  The file only grows, by one short line
(``O_APPEND``: concurrent writers never mix lines); a line of a deleted task is never
read again.  A task created before this record existed is not in it: it waits for a
human's ``orange task spawn``, as a teammate's does.
"""

from __future__ import annotations

import os

from orange.errors import EnvironmentProblem
from orange.store.layout import valid_task_id
from orange.store.store import TaskStore

RECORD = "queue"


def enter(store: TaskStore, task_id: str) -> None:
    """Put ``task_id`` at the end of this host's queue (nothing if it is in it)."""
    if not valid_task_id(task_id) or task_id in positions(store):
        return
    path = store.repo.orange_dir() / RECORD
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{task_id}\n".encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise EnvironmentProblem.of(exc) from None


def positions(store: TaskStore) -> dict[str, int]:
    """Each task of this host's queue and its place in it (0 first).  A missing or
    unreadable record is an empty queue, never an error; a line that is no task id is
    passed over."""
    try:
        lines = (store.repo.orange_dir() / RECORD).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, int] = {}
    for line in lines:
        if valid_task_id(line) and line not in found:
            found[line] = len(found)
    return found
