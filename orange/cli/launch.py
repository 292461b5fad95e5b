"""``task create``'s two steps: create the task, then try to start it."""

from __future__ import annotations

import sys

import typer

from orange.cli.context import TaskRef
from orange.cli.engine import engine_for
from orange.cli.output import emit_json, task_object
from orange.engine.catalog import load_named
from orange.engine.tasks import create_task
from orange.errors import OrangeError
from orange.hooks import harness as harnesses
from orange.hooks.workspace import PoolFull
from orange.projects import Project, open_store


def create_and_spawn(
    project: Project,
    *,
    summary: str,
    branch: str | None,
    context: str | None,
    status: str | None,
    harness: str | None,
    review_harness: str | None,
    effort: str | None,
    review_effort: str | None,
    spawn: bool,
    json_out: bool,
) -> None:
    """Create, then spawn unless told not to or the task starts in ``reviewing``.

    A full pool is not an error here: the task waits in ``pending`` for ``spawn_next``
    and the output says so (exit 0).  Any other spawn failure leaves the task where it
    was created, says that it exists and why it did not start, and exits 1.
    """

    workflow = load_named(project.workflow)
    chosen = ""
    will_spawn = spawn and status != "reviewing"
    if harness or will_spawn:
        chosen = harnesses.resolve(harness).name
    review = harnesses.review_name(review_harness, chosen) if chosen else (review_harness or "")
    if review:
        harnesses.resolve(review)
    extra = {k: v for k, v in (("effort", effort), ("review_effort", review_effort)) if v}
    if chosen and effort:
        harnesses.resolve(chosen).command("x", role="worker", effort=effort)
    store = open_store(project)
    task = create_task(
        store,
        project,
        workflow,
        summary=summary,
        branch=branch,
        context=context,
        status=status,
        harness=chosen,
        review_harness=review,
        extra=extra,
    )
    lines = [f"created task {task.id} [{task.status}] on branch {task.branch}"]
    result: dict[str, object] = {}
    code = 0
    if will_spawn and task.status != "reviewing":
        engine = engine_for(TaskRef(project, store, task.id))
        try:
            outcome = engine.spawn(task.id)
        except PoolFull as exc:
            lines.append(f"queued: {exc.message}; it starts when a workspace frees up")
            result["queued"] = True
        except OrangeError as exc:
            lines.append(f"task {task.id} exists but did not start: {exc}")
            result["spawn_error"] = str(exc)
            result["error"] = f"task {task.id} exists but did not start: {exc}"
            code = 1
        else:
            task = outcome.task
            lines.append(
                f"started: {outcome.from_status} -> {outcome.to_status}"
                if outcome.from_status != outcome.to_status
                else "started its agent"
            )
            lines.extend(outcome.messages)
            for error in outcome.hook_errors:
                print(f"orange: warning: {error}", file=sys.stderr)
    if json_out:
        obj = task_object(store.get(task.id))
        obj.update(result)
        emit_json(obj)
    else:
        for line in lines[:-1] if code else lines:
            typer.echo(line)
    if code:
        print(f"orange: {lines[-1]}", file=sys.stderr)
        raise typer.Exit(code)
