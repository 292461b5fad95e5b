"""Status changes from the command line; every one goes through the engine."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from orange.cli.context import locate
from orange.cli.engine import engine_for, report_outcome
from orange.cli.output import emit_json, task_object
from orange.cli.task import JsonOpt, ProjectOpt
from orange.engine import requests
from orange.errors import InvalidInput

if TYPE_CHECKING:
    from orange.engine.decide import Outcome

TaskArg = Annotated[str | None, typer.Argument(help="Task id (default: this workspace's).")]


def spawn(
    task: TaskArg = None,
    project: ProjectOpt = None,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Start without claiming the task on the sync remote."),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Start a task's agent (its workflow's move out of pending, or its state's entry)."""
    ref = locate(task, project)
    options = {"explicit": True, "offline": offline}
    outcome = engine_for(ref).spawn(ref.task_id, options=options)
    report_outcome(outcome, json_out)
    _say_started(outcome, "started", json_out)


def _say_started(outcome: Outcome, what: str, json_out: bool) -> None:
    """One line for a start that moved no status (its entry actions ran): silence would
    leave the user guessing whether anything happened."""
    if json_out or outcome.from_status != outcome.to_status:
        return
    task = outcome.task
    print(
        f"task {task.id}: agent {what} in {task.status}"
        f" (watch it with `orange task attach {task.id}`)"
    )


def take(
    task: Annotated[str, typer.Argument(help="Task id.")],
    project: ProjectOpt = None,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Move it to this registered host (auto: the freest)."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Move a task whose host is gone to this host: fetch its branch from the sync
    remote, bind a worktree here and restart its agent (the old host stops its own at
    its next sync).  With --host, that host takes it (or starts it), over SSH."""
    ref = locate(task, project)
    if host is not None:
        from orange.cli.hosting import take_to_host  # SSH: for --host only

        take_to_host(ref.project, ref.task_id, host, json_out)
        return
    # The sync machinery (git remotes, the merge): loaded for a take only.
    from orange.sync.take import take_task

    report_outcome(take_task(engine_for(ref), ref.task_id), json_out)


def respawn(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Restart the agent of a task's current state after it died."""
    ref = locate(task, project)
    outcome = engine_for(ref).respawn(ref.task_id)
    report_outcome(outcome, json_out)
    _say_started(outcome, "restarted", json_out)


def cancel(
    task: TaskArg = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Snapshot unsaved work, then release anyway.")
    ] = False,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Cancel a task (kills its agent, releases its worktree; never loses work)."""

    ref = locate(task, project)
    if not yes and sys.stdin.isatty():
        current = ref.store.get(ref.task_id)
        if not typer.confirm(f"cancel task {current.id} ({current.summary})?"):
            raise typer.Exit(1)
    elif not yes and not json_out and not sys.stdin.isatty():
        raise InvalidInput("refusing to cancel without confirmation", hint="pass --yes")
    report_outcome(requests.cancel(engine_for(ref), ref.task_id, {"force": force}), json_out)


def request_changes(
    task: TaskArg = None,
    message: Annotated[str | None, typer.Option("--message", "-m", help="What to change.")] = None,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Send a task in review back to its worker, with your feedback in ## Feedback.

    Only from a status a human holds (reviewing, or stuck where the workflow leads back
    to working): elsewhere a move to working is the agent's own, gated move (planning
    with a plan, agent-review with a failed review), which a human's feedback must not
    make.
    """
    ref = locate(task, project)
    report_outcome(requests.request_changes(engine_for(ref), ref.task_id, message or ""), json_out)


def complete(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """The agent is done: hand the task to a human (self-review: working -> reviewing)."""
    ref = locate(task, project)
    report_outcome(requests.complete(engine_for(ref), ref.task_id), json_out)


def stuck(
    task: TaskArg = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why.")] = None,
    project: ProjectOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The agent cannot finish: ask a human for help (the escalation state, e.g. stuck)."""

    ref = locate(task, project)
    report_outcome(requests.ask_for_help(engine_for(ref), ref.task_id, reason or ""), json_out)


def ack(task: TaskArg = None, project: ProjectOpt = None, json_out: JsonOpt = False) -> None:
    """Clear a task's attention flag."""
    ref = locate(task, project)
    updated = engine_for(ref).ack(ref.task_id)
    if json_out:
        emit_json(task_object(updated))
    else:
        typer.echo(f"task {updated.id}: attention cleared")


# `task` subcommands, registered by `orange.cli.main.build_app`.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("spawn", spawn),
    ("respawn", respawn),
    ("take", take),
    ("cancel", cancel),
    ("request-changes", request_changes),
    ("complete", complete),
    ("stuck", stuck),
    ("ack", ack),
)
