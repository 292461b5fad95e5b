"""A run's subtasks as Orange tasks: created under the shipped ``run-subtask`` workflow,
linked to their run (``run`` and ``subtask`` fields), their branch starting from the
run's branch (``base``), so `task list`, `git log refs/orange/tasks` and the dashboard
show them like any task."""

from __future__ import annotations

from orange.engine import localqueue
from orange.engine.catalog import load_named
from orange.engine.tasks import create_task
from orange.run import state
from orange.run.record import RunRecord
from orange.store.listing import all_tasks
from orange.store.runfile import RunFile
from orange.store.task import Task

WORKFLOW = "run-subtask"


def create_missing(runner: RunRecord) -> None:
    """One task per subtask that has none yet, recorded on this host as the subtask's
    (`state.record_task`: `resume` and `cancel` touch no other task).  A task created
    before a crash, whose id the records missed, is found by its ``run``/``subtask``
    fields and adopted, if this host created it (those fields are shared data)."""
    run = runner.record()
    plan = {s.id: s for s in runner.the_plan().subtasks}
    created_here = localqueue.positions(runner.store)
    existing = {
        sid: task_id
        for sid, task_id in _tasks_of_run(runner, run).items()
        if task_id in created_here
    }
    workflow = load_named(WORKFLOW)
    for entry in run.subtasks():
        sid = str(entry["id"])
        if entry.get("task"):
            continue
        task_id = existing.get(sid)
        if task_id is None:
            task = create_task(
                runner.store,
                runner.project,
                workflow,
                summary=f"[run {run.id}] {plan[sid].title}",
                branch=str(entry["branch"]),
                context=plan[sid].description,
                extra={"run": run.id, "subtask": sid, "base": run.fields["branch"]},
            )
            task_id = task.id
        state.record_task(runner.store, run.id, sid, task_id)
        runner.event("subtask", "PLANNED", "planned", f"task {task_id}", sub=sid)
        _link(runner, sid, task_id)


def _link(runner: RunRecord, sid: str, task_id: str) -> None:
    def change(run: RunFile) -> None:
        state.set_subtask(run, sid, task=task_id)

    runner.update(f"subtask {sid} is task {task_id}", change)


def _tasks_of_run(runner: RunRecord, run: RunFile) -> dict[str, str]:
    found: dict[str, str] = {}
    for task in all_tasks(runner.store):
        if not isinstance(task, Task) or task.project != runner.project.name:
            continue
        sid = task.fields.get("subtask")
        if task.fields.get("run") == run.id and isinstance(sid, str):
            found[sid] = task.id
    return found
