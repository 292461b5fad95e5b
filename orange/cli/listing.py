"""``orange task list``, shared by the typer command and the fast path."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, NamedTuple

from orange import projects
from orange.cli.context import current_project
from orange.cli.output import broken_object, emit_json, task_object, task_table, visible
from orange.engine import dependencies
from orange.engine.definitions import Definitions
from orange.engine.elsewhere import running_elsewhere
from orange.engine.localqueue import Standing, standings
from orange.errors import BrokenTaskFile, InvalidInput
from orange.home import host_name, orange_home
from orange.hosts.holdings import where
from orange.projects import open_store
from orange.runtime import settingup, waiting
from orange.runtime.conflicts import Clash, predicted
from orange.store import listing
from orange.store.task import BrokenTask, Task

if TYPE_CHECKING:
    from orange.projects import Project
    from orange.store.store import Snapshot, TaskStore
    from orange.store.task import BrokenTask, Task


def list_tasks(
    *,
    status: str | None,
    all_: bool,
    all_projects: bool,
    body: bool,
    project: str | None,
    json_out: bool,
    tree: bool = False,
) -> None:
    """``task list``: this project's tasks (or every project's), newest activity first;
    ``tree``: in the order they can be merged, each under the tasks it waits for."""

    if tree and json_out:
        raise InvalidInput(
            "--tree draws the order for people; --json lists each task's after: instead",
            hint="`orange task list --tree`, or `orange task list --json`",
        )
    here = None if all_projects else current_project(project)
    scope = [here] if here is not None else projects.load_all()
    if json_out and not body:
        _list_json_fast(scope, status=status, all_=all_)
        return
    rows: list[tuple[Task | BrokenTask, str | None]] = []
    untrusted: set[str] = set()
    notes: dict[str, str] = {}  # this host's: running elsewhere, setting up here
    busy: set[str] = set()
    queue: dict[str, Standing] = {}  # this host's: queued, parked
    clashes: dict[str, tuple[Clash, ...]] = {}  # this clone's: predicted conflicts
    waits: dict[str, str] = {}  # this host's: agents waiting on a known screen
    for proj in scope:
        busy |= setting_up(proj.name)
        waits |= waiting.waiting(proj.name)
        store = open_store(proj)
        snap = store.snapshot()
        queue |= standings(store, snap, proj.name)
        clashes |= predicted(store, snap, proj)
        shown = _Filter(Definitions(snap), proj.name, status, all_)
        for task in listing.tasks(snap):
            if isinstance(task, Task):
                rev = task.str_field("workflow_rev")
                if not shown(task.project, task.workflow, rev, task.status):
                    continue
                rows.append(_with_body(store, task) if body and json_out else (task, None))
                if isinstance(rows[-1][0], BrokenTask):  # its file damaged since cached
                    continue
                if not shown.known.task_trusted(task):
                    untrusted.add(task.id)
                _note_elsewhere(task, shown.known.is_active(task.workflow, rev, task.status), notes)
            elif status is None:  # a broken task has no status to match a filter
                rows.append((task, None))
    if not rows and status is not None:
        _check_status(scope, status)
    rows.sort(key=lambda row: _activity(row[0]), reverse=True)
    for task_id, screen in waits.items():
        notes[task_id] = f"(waiting: {screen})"
    local = _Local(untrusted, notes, busy, queue, clashes)
    if tree:
        _tree([task for task, _ in rows], local)
        return
    _emit(rows, local, json_out=json_out, show_project=len(scope) > 1)


class _Local(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """This host's marks on the listed tasks, by id: not trusted here, notes (running
    elsewhere), worktree setting up, where a task stands in this host's queue, the
    conflicts its branch would meet (`orange.runtime.conflicts`)."""

    untrusted: set[str]
    notes: dict[str, str]
    busy: set[str]
    queue: dict[str, Standing]
    clashes: dict[str, tuple[Clash, ...]]


def _emit(
    rows: list[tuple[Task | BrokenTask, str | None]],
    local: _Local,
    *,
    json_out: bool,
    show_project: bool,
) -> None:
    if json_out:
        objects = [
            _object(t, b, local.untrusted, local.busy)
            | _queue(t.id, local.queue)
            | _clashes(t.id, local.clashes)
            for t, b in rows
        ]
        emit_json({"tasks": objects})
        return
    queued = {task_id: _queue_note(standing) for task_id, standing in local.queue.items()}
    task_table(
        [t for t, _ in rows],
        show_project=show_project,
        untrusted=frozenset(local.untrusted),
        notes={**local.notes, **queued, **dict.fromkeys(local.busy, "(setting up)")},
        conflicts={
            task_id: [clash.text(most=3) for clash in found]
            for task_id, found in local.clashes.items()
        },
    )


def _tree(tasks: list[Task | BrokenTask], local: _Local) -> None:
    """The listed tasks as a forest of ``after:`` links (`dependencies.forest`): each
    task under the listed tasks it waits for (under the first, marked ``^`` under the
    others), roots oldest first; a task's line says its status, this host's word on it
    and its branch."""
    lines: list[str] = []
    for place in dependencies.forest(task for task in tasks if isinstance(task, Task)):
        task = place.task
        if place.again:  # waits for several listed tasks: drawn in full once
            lines.append(f"{place.lead()}^ {task.id}")
            continue
        note = local.notes.get(task.id) or (
            _queue_note(local.queue[task.id]) if task.id in local.queue else ""
        )
        status = f"{task.status} {note}".strip()
        lines.append(visible(f"{place.lead()}{task.id}  {status}  {task.branch}  {task.summary}"))
    for broken in tasks:
        if isinstance(broken, BrokenTask):
            lines.append(visible(f"{broken.id}  broken  {broken.error}"))
    print("\n".join(lines) if lines else "no tasks")


def _queue(task_id: str, queue: dict[str, Standing]) -> dict[str, object]:
    """This host's word on a task waiting in its queue state (`localqueue`)."""
    standing = queue.get(task_id)
    if standing is None:
        return {}
    if standing.state == "queued":
        return {"queue": "queued", "queue_position": standing.position}
    if standing.state == "waiting":
        parked = {"parked": True} if standing.parked else {}
        return {"queue": "waiting", "waiting_for": list(standing.waiting_for), **parked}
    return {"queue": standing.state}


def _clashes(task_id: str, clashes: dict[str, tuple[Clash, ...]]) -> dict[str, object]:
    """The conflicts ``task_id``'s branch would meet, when it would meet any."""
    found = clashes.get(task_id)
    return {"conflicts": [clash.as_json() for clash in found]} if found else {}


def _queue_note(standing: Standing) -> str:
    if standing.state == "parked":
        return "(parked: starts when a human runs `orange task spawn`)"
    return f"({standing.label(most=len(standing.waiting_for))})"


def _with_body(store: TaskStore, task: Task) -> tuple[Task | BrokenTask, str | None]:
    """The task and its text, or the task broken when git cannot read its file from
    this clone's objects (damaged since the listing cached it)."""
    try:
        return task, store.body_of(task)
    except BrokenTaskFile as exc:
        return BrokenTask(task.path, exc.message, task.blob_id, task.id), None


def _note_elsewhere(task: Task, active: bool, notes: dict[str, str]) -> None:
    host = running_elsewhere(task, active=active, here=host_name())
    if host is not None:
        gone = where(host)
        notes[task.id] = f"running on {host}; {gone}" if gone else f"running on {host}"


def _object(
    task: Task | BrokenTask, body: str | None, untrusted: set[str], busy: set[str]
) -> dict[str, object]:
    if not isinstance(task, Task):
        return broken_object(task)
    out = task_object(task, body=body)
    if task.id in busy:
        out["setting_up"] = True  # this host's mark: its worktree's setup is running
    look = waiting.read(task.project, task.id) if task.str_field("tmux_session") else None
    if look is not None and look.screen:
        out["waiting"] = look.screen  # this host's mark: its agent waits on that screen
    if task.id in untrusted:
        out["trusted"] = False  # this host's mark: its definition is not trusted here
    return out


def _list_json_fast(scope: list[Project], *, status: str | None, all_: bool) -> None:
    """``task list --json`` straight from the cache's JSON text: no object per task.

    Same output as building task objects (`task_object`), an order of magnitude less
    work at 10,000 tasks.
    """

    workspaces = orange_home() / "workspaces"
    rows: list[tuple[str, str]] = []
    for proj in scope:
        store = open_store(proj)
        snap = store.snapshot()
        shown = _Filter(Definitions(snap), proj.name, status, all_)
        busy = setting_up(proj.name)
        waits = waiting.waiting(proj.name)
        queue = _queue_of(store, snap, proj.name, shown.known)
        clashes = predicted(store, snap, proj)
        for entry in listing.entries(snap):
            if entry.fields_json is None:
                if status is not None:  # a broken task has no status to match a filter
                    continue
                broken = BrokenTask(
                    path=f"{entry.task_dir}/TASK.md",
                    error=entry.error or "",
                    blob_id=entry.blob,
                    id=entry.task_dir.rsplit("/", 1)[-1],
                )
                rows.append(("~", json.dumps(broken_object(broken), ensure_ascii=False)))
                continue
            if not shown(entry.project, entry.workflow, entry.workflow_rev, entry.status):
                continue
            text = entry.fields_json
            if entry.workspace:
                path = json.dumps(str(workspaces / entry.workspace), ensure_ascii=False)
                text = f'{text[:-1]}, "workspace_path": {path}}}' if text != "{}" else text
            if text != "{}" and not shown.known.trusted(entry.workflow, entry.workflow_rev):
                text = f'{text[:-1]}, "trusted": false}}'  # this host's mark, as `_object`
            if busy and text != "{}" and entry.task_dir.rsplit("/", 1)[-1] in busy:
                text = f'{text[:-1]}, "setting_up": true}}'
            if waits and text != "{}" and entry.task_dir.rsplit("/", 1)[-1] in waits:
                screen = json.dumps(waits[entry.task_dir.rsplit("/", 1)[-1]])
                text = f'{text[:-1]}, "waiting": {screen}}}'  # this host's mark, as `_object`
            task_id = entry.task_dir.rsplit("/", 1)[-1]
            for mark in (_queue(task_id, queue), _clashes(task_id, clashes)):
                if mark and text != "{}":
                    text = f"{text[:-1]}, {json.dumps(mark, ensure_ascii=False)[1:]}"
            rows.append((entry.activity, text))
    if not rows and status is not None:
        _check_status(scope, status)
    rows.sort(key=lambda row: row[0], reverse=True)
    sys.stdout.write('{"tasks": [' + ", ".join(text for _, text in rows) + "]}\n")


def _queue_of(
    store: TaskStore, snap: Snapshot, project: str, known: Definitions
) -> dict[str, Standing]:
    """`localqueue.standings` of the entries in their queue state, read as tasks (only
    those: the fast listing builds no object for the others)."""
    ids = []
    for entry in listing.entries(snap):
        workflow = known.workflow(entry.workflow, entry.workflow_rev) if entry.fields_json else None
        if workflow is not None and entry.status == workflow.queue_state:
            ids.append(entry.task_dir.rsplit("/", 1)[-1])
    if not ids:
        return {}
    return standings(store, snap, project, [snap.task(task_id) for task_id in ids])


def setting_up(project: str) -> set[str]:
    """Ids of the project's tasks whose worktree this host is setting up right now."""
    return {mark.task for mark in settingup.live(project) if not mark.ready}


def _check_status(scope: list[Project], status: str) -> None:
    """Nothing matched ``--status``: say so when no project's workflow has that status
    (a typo is an error, not an empty list)."""
    states: set[str] = set()
    for proj in scope:
        workflow = Definitions(open_store(proj).snapshot()).workflow(proj.workflow, "")
        states.update(workflow.states if workflow is not None else ())
    if states and status not in states:
        raise InvalidInput(
            f"no status {status!r} in the workflow of {_names(scope)}",
            hint=f"statuses: {', '.join(sorted(states))}",
        )


def _names(scope: list[Project]) -> str:
    return ", ".join(sorted({proj.name for proj in scope}))


class _Filter:
    """Whether `task list` shows a task: of this project, and in the asked status, or
    (without ``--all``) in a status its workflow does not end in."""

    def __init__(self, known: Definitions, project: str, status: str | None, all_: bool):
        self.known = known
        self.project = project
        self.status = status
        self.all = all_

    def __call__(self, project: str, workflow: str, rev: str, status: str) -> bool:
        if project and project != self.project:
            return False
        if self.status is not None:
            return status == self.status
        return self.all or self.known.is_active(workflow, rev, status)


def _activity(task: object) -> str:

    if isinstance(task, Task):
        return task.str_field("updated_at") or task.str_field("created_at")
    return "~"  # broken tasks sort first: someone should look at them
