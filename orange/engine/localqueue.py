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
(``O_APPEND``: concurrent writers never mix lines).  An id is no name for good: a
teammate may legally cancel a queued task, delete it and make another under its id
with their own text, so when the replay sees a task deleted (every commit that reaches
the ref is replayed, `orange.engine.forgery.verify_new`: by the sync that brings it,
the monitor's pass, a tasks checkout's hooks) a line ``-ID`` takes that id out of the
queue.  A task created before this record existed is not in it: it waits for a
human's ``orange task spawn``, as a teammate's does.

A task created here with ``--no-spawn`` is *parked*: in the queue record (created
here), and in a second local record, ``parked``, that ``spawn_next`` passes over; it
starts only when a human starts it (``orange task spawn``, which takes it off that
record, so a spawn that finds the pool full leaves it queued).  That record is a log
too: a line ``ID`` parks, ``-ID`` unparks, the last line about a task decides.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from orange.engine import dependencies
from orange.engine.definitions import Definitions
from orange.errors import EnvironmentProblem
from orange.store import listing
from orange.store.layout import valid_task_id
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task

RECORD = "queue"
PARKED = "parked"


def enter(store: TaskStore, task_id: str) -> None:
    """Put ``task_id`` at the end of this host's queue (nothing if it is in it)."""
    if not valid_task_id(task_id) or task_id in positions(store):
        return
    append_line(store, RECORD, task_id)


def park(store: TaskStore, task_id: str) -> None:
    """Keep ``task_id`` out of ``spawn_next``'s reach: only a human starts it."""
    if valid_task_id(task_id) and task_id not in parked(store):
        append_line(store, PARKED, task_id)


def unpark(store: TaskStore, task_id: str) -> None:
    """A human asked to start ``task_id``: it is queued again (if it was parked)."""
    if task_id in parked(store):
        append_line(store, PARKED, f"-{task_id}")


def parked(store: TaskStore) -> set[str]:
    """The parked tasks (a missing or unreadable record parks none)."""
    found: set[str] = set()
    for line in record_lines(store, PARKED):
        if valid_task_id(line):
            found.add(line)
        elif line.startswith("-"):
            found.discard(line[1:])
    return found


def append_line(store: TaskStore, record: str, line: str) -> None:
    """Append ``line`` to one of this clone's local records (``O_APPEND``: concurrent
    writers never mix lines)."""
    path = store.repo.orange_dir() / record
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{line}\n".encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise EnvironmentProblem.of(exc) from None


def record_lines(store: TaskStore, record: str) -> list[str]:
    """The lines of one of this clone's local records (none when missing or unreadable)."""
    try:
        return (store.repo.orange_dir() / record).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def forget(store: TaskStore, task_ids: Iterable[str]) -> None:
    """The tasks ``task_ids`` left the ref (a legal deletion, `orange.engine.forgery`):
    their ids leave this host's queue for good, so a task a teammate makes later under
    the same id waits like any of theirs."""
    held = positions(store)
    for task_id in sorted(set(task_ids) & held.keys()):
        append_line(store, RECORD, f"-{task_id}")


def stamp(store: TaskStore) -> tuple[tuple[int, int], ...]:
    """What the records look like from outside (size and change time of each): a
    watcher (the dashboard) reads the standings again only when this changes or the
    ref moves.  A missing record is ``(0, 0)``."""
    found = []
    for record in (RECORD, PARKED):
        try:
            info = (store.repo.orange_dir() / record).stat()
            found.append((info.st_size, info.st_mtime_ns))
        except OSError:
            found.append((0, 0))
    return tuple(found)


def positions(store: TaskStore) -> dict[str, int]:
    """Each task of this host's queue and its place in it (0 first).  A missing or
    unreadable record is an empty queue, never an error; a line that is no task id is
    passed over, and a line ``-ID`` (`forget`) takes ``ID`` out."""
    found: dict[str, int] = {}
    for line in record_lines(store, RECORD):
        if valid_task_id(line) and line not in found:
            found[line] = len(found)
        elif line.startswith("-"):
            found.pop(line[1:], None)
    return {task_id: place for place, task_id in enumerate(found)}


class Standing(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """Where a task waiting in its workflow's queue state stands on this host:
    ``queued`` (``position`` 1 starts next), ``parked`` (only a human starts it:
    created with ``--no-spawn``, or not created nor taken here) or ``waiting`` for the
    tasks it names in ``after`` (`orange.engine.dependencies`)."""

    state: str
    position: int = 0
    waiting_for: tuple[str, ...] = ()
    parked: bool = False  # waiting, and parked once they are merged

    def label(self, most: int = 3) -> str:
        """``queued #2``, ``parked``, ``waiting for ID, ID`` (past ``most`` ids, how many
        more; ``, then parked`` when only a human starts it after them)."""
        if self.state == "queued":
            return f"queued #{self.position}"
        if self.state != "waiting":
            return self.state
        shown = ", ".join(self.waiting_for[:most])
        more = len(self.waiting_for) - most
        then = ", then parked" if self.parked else ""
        return f"waiting for {shown}" + (f" and {more} more" if more > 0 else "") + then


def standings(
    store: TaskStore, snap: Snapshot, project: str, tasks: Iterable[object] | None = None
) -> dict[str, Standing]:
    """Each task of ``project`` (of ``tasks``, default all) in its workflow's queue
    state, trusted here, and where it stands; the queued numbered in the order
    ``spawn_next`` starts them."""
    known = Definitions(snap)
    order = positions(store)
    held = parked(store)
    waiting: list[Task] = []
    for task in listing.tasks(snap) if tasks is None else tasks:
        if not isinstance(task, Task) or task.project != project:
            continue
        workflow = known.of(task)
        if workflow is None or task.status != workflow.queue_state:
            continue
        if known.task_trusted(task):
            waiting.append(task)
    found: dict[str, Standing] = {}
    for task in waiting:
        blockers = dependencies.waiting_for(snap, known, task)
        if blockers:
            parked_after = task.id in held or task.id not in order
            found[task.id] = Standing("waiting", waiting_for=tuple(blockers), parked=parked_after)
    queued = sorted(
        (t for t in waiting if t.id in order and t.id not in held and t.id not in found),
        key=lambda t: order[t.id],
    )
    for place, task in enumerate(queued, start=1):
        found[task.id] = Standing("queued", place)
    for task in waiting:
        found.setdefault(task.id, Standing("parked"))
    return found


def queued(store: TaskStore, snap: Snapshot, project: str) -> list[str]:
    """The ids ``spawn_next`` may start, the next first."""
    found = standings(store, snap, project)
    return sorted(
        (i for i, s in found.items() if s.state == "queued"), key=lambda i: found[i].position
    )


def check_start(store: TaskStore, task: Task, *, human: bool) -> None:
    """Before ``task`` starts: refused while it waits for another (`dependencies`); a
    human's start takes it off the parked record (queued, should the pool be full)."""
    dependencies.require_ready(store.snapshot(), task)
    if human:
        unpark(store, task.id)
