"""A run's state: its record on the tasks ref, and what only this host knows of it.

On the ref (`orange.store.runfile`): the step reached, the clarification log, the plan,
each subtask's state and iteration.  Every change is one commit with ``Orange-Run`` and
``Orange-Step`` trailers, made by compare-and-swap like a task's (`TaskStore.commit`),
so the subtasks of one wave, each in its own thread, never lose one another's updates.

Local to this host, under ``<git-common-dir>/orange/runs/<id>/`` and never read from
the ref: the runner's lock (held while a runner works on the run; `resume` takes it
without waiting, so two resumes cannot both run), the process groups of the agents it
started (``agents/<subtask>``; `resume` and `cancel` stop what is still running), the
tasks it created for the run's subtasks (``tasks``: the only tasks `resume` and `cancel`
touch — a subtask's ``task`` in the record is shared data, and a forged record could
name any task of this host's), and the run's own worktree (``worktree``: the run
branch, where the architect reads the code and the waves are merged).  Agent logs go
to ``$ORANGE_HOME/logs/runs/<id>/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orange.errors import BrokenTaskFile, InvalidInput, NotFound
from orange.home import orange_home
from orange.run.contracts import SUBTASK_ID  # a subtask id names local files
from orange.runtime.workspace import RUNNER_LOCK, RUNS
from orange.store import runfile
from orange.store.events import Change
from orange.store.layout import valid_task_id
from orange.store.lock import attempt
from orange.store.runfile import RunFile
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task

# Seed 004's checkpoint steps, in order (a resumed run skips every step before its own).

STEPS = (
    "QUEUED",
    "REPO_SYNC",
    "WORKSPACE_CREATED",
    "BRANCH_CREATED",
    "CLARIFYING",
    "CLARIFIED",
    "PLANNING",
    "PLANNED",
    "AGENTS_SPAWNED",
    "SUBTASK_IMPLEMENTING",
    "SUBTASK_COMMITTING",
    "SUBTASK_TESTING",
    "SUBTASK_REVIEWING",
    "SUBTASK_FEEDBACK",
    "SUBTASK_DONE",
    "MERGING_AGENTS",
    "CREATING_PR",
    "COMPLETED",
    "FAILED",
)
ENDED = runfile.ENDED


def step_index(step: str) -> int:
    return STEPS.index(step) if step in STEPS else 0


def local_dir(store: TaskStore, run_id: str) -> Path:
    if not runfile.valid_run_id(run_id):
        raise InvalidInput(f"{run_id!r} is no run id", hint="see `orange run list`")
    path = store.repo.orange_dir() / RUNS / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_dir(run_id: str) -> Path:
    return orange_home() / "logs" / "runs" / run_id


def agent_log(task: Task) -> Path | None:
    """Where the agents of a run's subtask write on this host (None: no subtask of a
    run).  Only the ids come from the task, each checked; the folder is this host's."""
    run_id, sid = task.str_field("run"), task.str_field("subtask")
    if not runfile.valid_run_id(run_id) or not SUBTASK_ID.fullmatch(sid):
        return None
    return log_dir(run_id) / f"{sid}.log"


@contextmanager
def runner_lock(store: TaskStore, run_id: str) -> Iterator[bool]:
    """This host's lock on running ``run_id``; yields whether it was taken."""
    with attempt(local_dir(store, run_id) / RUNNER_LOCK) as held:
        yield held


def is_running_here(store: TaskStore, run_id: str) -> bool:
    """Whether a runner on this host holds the run (a killed one holds nothing)."""
    with runner_lock(store, run_id) as held:
        return not held


# -- agents' process groups (local files: a pid never comes from the shared ref) ------


def _agent_file(store: TaskStore, run_id: str, who: str) -> Path:
    if not SUBTASK_ID.fullmatch(who):
        raise InvalidInput(f"{who!r} is no subtask id")
    folder = local_dir(store, run_id) / "agents"
    folder.mkdir(exist_ok=True)
    return folder / who


def record_agent(store: TaskStore, run_id: str, who: str, pid: int) -> None:
    _agent_file(store, run_id, who).write_text(f"{pid}\n")


def forget_agent(store: TaskStore, run_id: str, who: str) -> None:
    _agent_file(store, run_id, who).unlink(missing_ok=True)


def recorded_agents(store: TaskStore, run_id: str) -> dict[str, int]:
    folder = local_dir(store, run_id) / "agents"
    found: dict[str, int] = {}
    for entry in folder.iterdir() if folder.is_dir() else ():
        try:
            found[entry.name] = int(entry.read_text().strip())
        except (OSError, ValueError):
            continue
    return found


# -- the subtasks' tasks (a local file: which task is a run's never comes from the ref) --

TASKS = "tasks"  # "<subtask id> <task id>" per line, appended as this host creates each


def record_task(store: TaskStore, run_id: str, sid: str, task_id: str) -> None:
    """Remember that this host created (or adopted) ``task_id`` for subtask ``sid``."""
    if not SUBTASK_ID.fullmatch(sid) or not valid_task_id(task_id):
        raise InvalidInput(f"{sid!r} / {task_id!r} is no subtask and task id")
    with (local_dir(store, run_id) / TASKS).open("a", encoding="utf-8") as handle:
        handle.write(f"{sid} {task_id}\n")


def recorded_tasks(store: TaskStore, run_id: str) -> dict[str, str]:
    """Subtask id -> the task this host created for it (the last line of a subtask
    wins; a line that does not parse is passed over)."""
    try:
        text = (local_dir(store, run_id) / TASKS).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and SUBTASK_ID.fullmatch(parts[0]) and valid_task_id(parts[1]):
            found[parts[0]] = parts[1]
    return found


def foreign_subtask(store: TaskStore, run: RunFile) -> str | None:
    """Why ``run`` names a task this host did not create for it (None: it names none):
    a subtask whose ``task`` in the record is not the one recorded here."""
    recorded = recorded_tasks(store, run.id)
    for entry in run.subtasks():
        named, sid = entry.get("task"), str(entry.get("id"))
        if named and recorded.get(sid) != str(named):
            return (
                f"run {run.id} lists task {named} as its subtask {sid}, not one this host "
                "created for it"
            )
    return None


def own_task(store: TaskStore, run_id: str, sid: str) -> str:
    """The task this host created for subtask ``sid`` of run ``run_id``."""
    task_id = recorded_tasks(store, run_id).get(sid)
    if task_id is None:
        raise NotFound(f"run {run_id}: subtask {sid} has no task created on this host")
    return task_id


# -- the record on the ref --------------------------------------------------------------


def read(snap: Snapshot, run_id: str) -> RunFile | None:
    """The run's record; raises BrokenTaskFile if it does not parse."""
    data = snap.read(runfile.run_path(run_id))
    return None if data is None else runfile.load(data, run_id)


def get(store: TaskStore, prefix: str) -> RunFile:
    """The run with this id or unique id prefix."""
    snap = store.snapshot()
    ids = sorted(i for i in runfile.run_ids(snap.tree) if i.startswith(prefix.strip()))
    if not prefix.strip() or not ids:
        raise NotFound(f"no run {prefix!r}", hint="see `orange run list`")
    if len(ids) > 1:
        raise InvalidInput(f"run id {prefix!r} is ambiguous: {', '.join(ids[:5])}")
    run = read(snap, ids[0])
    assert run is not None
    return run


def all_runs(store: TaskStore) -> list[RunFile | tuple[str, str]]:
    """Every run, newest first; a broken record is (id, reason)."""
    snap = store.snapshot()
    found: list[RunFile | tuple[str, str]] = []
    for run_id in runfile.run_ids(snap.tree):
        try:
            run = read(snap, run_id)
        except BrokenTaskFile as exc:
            found.append((run_id, exc.message))
            continue
        if run is not None:
            found.append(run)
    return sorted(found, key=_created, reverse=True)


def _created(entry: RunFile | tuple[str, str]) -> str:
    return str(entry.fields.get("created_at", "")) if isinstance(entry, RunFile) else ""


def create(store: TaskStore, fields: dict[str, Any], request: str) -> RunFile:
    run = RunFile(runfile.new_fields(fields), {})
    run.set_json("Request", request)
    run.fields["created_at"] = run.fields["updated_at"] = now_iso()
    path = runfile.run_path(run.id)

    def compute(snap: Snapshot) -> Change:
        if snap.read(path) is not None:
            raise InvalidInput(f"run {run.id} exists already")
        return _change(run, f"run {run.id}: queued", "QUEUED")

    store.commit(compute)
    return run


def update(
    store: TaskStore,
    run_id: str,
    subject: str,
    change: Callable[[RunFile], None],
    trailers: Callable[[], tuple[tuple[str, str], ...]] | None = None,
) -> RunFile:
    """Apply ``change`` to the run's current record and commit it (re-applied on the new
    tip when another writer, say a sibling subtask's thread, moved the ref first).
    ``trailers``: more trailers, asked for after ``change`` ran (a usage record's)."""
    result: list[RunFile] = []

    def compute(snap: Snapshot) -> Change:
        run = read(snap, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        change(run)
        run.fields["updated_at"] = now_iso()
        result[:] = [run]
        step = str(run.fields.get("step", ""))
        more = trailers() if trailers is not None else ()
        return _change(run, f"run {run_id}: {subject}", step, more)

    store.commit(compute)
    return result[0]


def _change(
    run: RunFile, subject: str, step: str, more: tuple[tuple[str, str], ...] = ()
) -> Change:
    return Change(
        task_id=run.id,
        event="run.step",
        subject=subject,
        writes={runfile.run_path(run.id): run.render().encode()},
        trailers=(("Orange-Run", run.id), ("Orange-Step", step), *more),
    )


def number(values: dict[str, Any], key: str, default: int) -> int:
    """A count from the record (shared data): a whole number from 0 to 10,000, else
    ``default``."""
    value = values.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10_000:
        return value
    return default


def subtask(run: RunFile, sid: str) -> dict[str, Any]:
    for entry in run.fields.get("subtasks") or ():
        if entry.get("id") == sid:
            return dict(entry)
    raise NotFound(f"run {run.id} has no subtask {sid!r}")


def set_subtask(run: RunFile, sid: str, **values: Any) -> None:
    entries = [dict(e) for e in run.fields.get("subtasks") or ()]
    for entry in entries:
        if entry.get("id") == sid:
            entry.update(values)
    run.fields["subtasks"] = entries


def shown_status(store: TaskStore, run: RunFile) -> str:
    """The run's status as `run list` shows it: a ``running`` run whose runner is gone
    from this host is ``interrupted``."""
    status = str(run.fields.get("status", ""))
    if status == "running" and not is_running_here(store, run.id):
        return "interrupted"
    return status
