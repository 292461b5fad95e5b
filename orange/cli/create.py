"""``task create``'s output: what `orange.ops.create.create_and_spawn` did."""

from __future__ import annotations

import sys

import typer

from orange.cli.output import emit_json, task_object
from orange.compose import build_engine
from orange.ops.create import Harnesses, Launch, create_and_spawn
from orange.projects import Project


def create_and_report(
    project: Project,
    *,
    summary: str,
    branch: str | None,
    context: str | None,
    status: str | None,
    agents: Harnesses,
    spawn: bool,
    json_out: bool,
    base: str | None = None,
    offline: bool = False,
    after: list[str] | None = None,
    budget: str | None = None,
) -> None:
    """Create and start a task, then say what happened.  A full pool is not an error
    (exit 0: the task is queued); any other failure to start is (exit 1), and says the
    task exists."""
    engine = build_engine(project)
    launch = create_and_spawn(
        engine,
        summary=summary,
        branch=branch,
        context=context,
        status=status,
        agents=agents,
        spawn=spawn,
        base=base,
        offline=offline,
        after=after,
        budget=budget,
    )
    task = launch.created
    lines, result = _describe(launch)
    if not agents.worker and launch.started is not None:
        lines.append(_chosen(engine.store.get(task.id).str_field("harness")))
    if json_out:
        obj = task_object(engine.store.get(task.id))
        obj.update(result)
        emit_json(obj)
    else:
        for line in lines:
            typer.echo(line)
    if launch.error is not None:
        print(f"orange: task {task.id} exists but did not start: {launch.error}", file=sys.stderr)
        raise typer.Exit(1)


def _chosen(harness: str) -> str:
    """Which agent Orange picked when --harness was left out, and why: never silently."""
    from orange.runtime.harness import BUILTINS, DEFAULT_ORDER

    if harness in BUILTINS:
        why = f"the first of {', '.join(DEFAULT_ORDER)} found on PATH"
    else:
        why = "no built-in agent is on PATH: the first harness of config.yml"
    return f"agent: {harness} ({why}; --harness chooses another)"


def _describe(launch: Launch) -> tuple[list[str], dict[str, object]]:
    """What to print, and what to add to the JSON object."""
    task = launch.created
    lines = [f"created task {task.id} [{task.status}] on branch {task.branch}"]
    result: dict[str, object] = {}
    if launch.queued is not None:
        lines.append(f"queued: {launch.queued}; it starts when a workspace frees up")
        result["queued"] = True
    if launch.waiting:
        lines.append(f"waiting for {', '.join(launch.waiting)}: it starts once they are merged")
        result["waiting_for"] = list(launch.waiting)
    if launch.error is not None:
        failure = f"task {task.id} exists but did not start: {launch.error}"
        result.update(spawn_error=launch.error, error=failure)
    if launch.started is not None:
        outcome = launch.started
        lines.append(
            f"started: {outcome.from_status} -> {outcome.to_status}"
            if outcome.from_status != outcome.to_status
            else "started its agent"
        )
        lines.extend(outcome.messages)
        for error in outcome.hook_errors:
            print(f"orange: warning: {error}", file=sys.stderr)
    return lines, result
