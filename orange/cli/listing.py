"""``orange task list``, shared by the typer command and the fast path."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from orange import projects
from orange.cli.context import current_project
from orange.cli.output import broken_object, emit_json, task_object, task_table
from orange.engine.definitions import Definitions
from orange.engine.elsewhere import running_elsewhere
from orange.errors import BrokenTaskFile, InvalidInput
from orange.home import host_name, orange_home
from orange.hooks import settingup
from orange.projects import open_store
from orange.store import listing
from orange.store.task import BrokenTask, Task

if TYPE_CHECKING:
    from orange.projects import Project
    from orange.store.store import TaskStore
    from orange.store.task import BrokenTask, Task


def list_tasks(
    *,
    status: str | None,
    all_: bool,
    all_projects: bool,
    body: bool,
    project: str | None,
    json_out: bool,
) -> None:
    """``task list``: this project's tasks (or every project's), newest activity first."""

    here = None if all_projects else current_project(project)
    scope = [here] if here is not None else projects.load_all()
    if json_out and not body:
        _list_json_fast(scope, status=status, all_=all_)
        return
    rows: list[tuple[Task | BrokenTask, str | None]] = []
    untrusted: set[str] = set()
    notes: dict[str, str] = {}  # this host's: running elsewhere, setting up here
    busy: set[str] = set()
    for proj in scope:
        busy |= setting_up(proj.name)
        store = open_store(proj)
        snap = store.snapshot()
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
    if json_out:
        emit_json({"tasks": [_object(t, b, untrusted, busy) for t, b in rows]})
    else:
        task_table(
            [t for t, _ in rows],
            show_project=len(scope) > 1,
            untrusted=frozenset(untrusted),
            notes={**notes, **dict.fromkeys(busy, "(setting up)")},
        )


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
        notes[task.id] = f"running on {host}"


def _object(
    task: Task | BrokenTask, body: str | None, untrusted: set[str], busy: set[str]
) -> dict[str, object]:
    if not isinstance(task, Task):
        return broken_object(task)
    out = task_object(task, body=body)
    if task.id in busy:
        out["setting_up"] = True  # this host's mark: its worktree's setup is running
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
        snap = open_store(proj).snapshot()
        shown = _Filter(Definitions(snap), proj.name, status, all_)
        busy = setting_up(proj.name)
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
            rows.append((entry.activity, text))
    if not rows and status is not None:
        _check_status(scope, status)
    rows.sort(key=lambda row: row[0], reverse=True)
    sys.stdout.write('{"tasks": [' + ", ".join(text for _, text in rows) + "]}\n")


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
