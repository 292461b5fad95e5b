"""Tasks left waiting for a cancelled task (DESIGN §10).

A task whose ``after:`` names a task that was cancelled would wait for good: it gets
``attention`` naming the cancelled task, and a person decides (drop the dependency or
cancel this task too).

One rule, whatever path cancelled the dependency: ``orange task cancel``, ``orange
task update --status``, the dashboard, a workflow's own move, a plain-git commit in a
tasks checkout, a teammate's cancel that arrived with a sync or a fetch.  Rather than
watch each path's move, `flag` reads what the ref holds now: every unfinished task
that this host may start (in its queue record: created or taken here, so a person
here decides for it) and whose ``after:`` names a task standing in its workflow's
cancelled state.  Each such pair is flagged once on this host (a local record,
``<git common dir>/orange/orphans``, one ``TASK DEPENDENCY`` a line): once a person
acknowledged it, it is not set again.  A teammate's task is flagged on the teammate's
host, by the same rule; a pushed ``after:`` can make this host write at most one commit
per task of its own and dependency.

Who calls it: the engine after each move into a cancelled state (so whoever cancels
reads it in the command's output), the monitor's pass after it verified what is new on
the ref, ``orange sync``, and the tasks checkout's git hooks.  A pass finds nothing new
cheaply: the tip it last looked at is kept next to the record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from orange.engine import dependencies, localqueue
from orange.engine.definitions import Definitions
from orange.errors import OrangeError
from orange.store import layout, listing
from orange.store.store import TaskStore
from orange.store.task import Task

RECORD = "orphans"
SEEN = "orphans.tip"  # the tasks ref's tip the last look read
EVENT = "task.dependency_cancelled"


class Marker(Protocol):
    def set_attention(self, task_id: str, reason: str, event: str = ...) -> Task:
        """Commit ``attention`` on the task (the engine's own write, with its notice)."""


def reason(task_id: str, cancelled: str) -> str:
    return (
        f"waits for task {cancelled}, which was cancelled: drop it with `orange task "
        f"update {task_id} --no-after`, or cancel this task too"
    )


def flag(store: TaskStore, marker: Callable[[], Marker], *, again: bool = False) -> list[str]:
    """Set ``attention`` on this host's tasks that wait for a cancelled task, each pair
    once; what was done, to say.  ``marker`` is asked for only when there is something
    to write.  Without ``again``, nothing is read when the ref has not moved since the
    last look."""
    ref = store.pygit.references.get(layout.TASKS_REF)
    tip = "" if ref is None else str(ref.target)
    if not again and tip and localqueue.record_lines(store, SEEN) == [tip]:
        return []
    ours = localqueue.positions(store)
    said: list[str] = []
    if ours:
        snap = store.snapshot()
        known = Definitions(snap)
        done = set(localqueue.record_lines(store, RECORD))
        for task in listing.tasks(snap):
            if not isinstance(task, Task) or task.id not in ours:
                continue
            waits = dependencies.listed(task)
            workflow = known.of(task) if waits else None
            if workflow is None or workflow.is_terminal(task.status):
                continue
            for dep in waits:
                pair = f"{task.id} {dep}"
                if pair in done or not _cancelled(snap.task(dep), known):
                    continue
                try:
                    marker().set_attention(task.id, reason(task.id, dep), event=EVENT)
                except OrangeError as exc:  # the next look tries again
                    said.append(f"warning: task {task.id} waits for {dep}: {exc.message}")
                    continue
                localqueue.append_line(store, RECORD, pair)
                done.add(pair)
                said.append(f"task {task.id} waited for {dep}: it needs attention")
    if tip:
        _write(store, SEEN, tip)
    return said


def _cancelled(task: Task | None, known: Definitions) -> bool:
    workflow = None if task is None else known.of(task)
    return task is not None and workflow is not None and task.status == workflow.cancelled_state


def _write(store: TaskStore, name: str, text: str) -> None:
    try:
        (store.repo.orange_dir() / name).write_text(f"{text}\n", encoding="utf-8")
    except OSError:
        pass  # only a shortcut: the next look reads the ref again
