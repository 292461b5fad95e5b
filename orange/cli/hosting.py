"""The ``--host`` side of ``task create``, ``task take``, ``task attach`` and ``task
peek``: the task runs, or is to run, on another registered host (`orange.hosts`)."""

from __future__ import annotations

import sys

import typer

from orange.cli.output import emit_json, task_object
from orange.compose import build_engine
from orange.errors import InvalidInput
from orange.hosts import reach
from orange.hosts.roster import Host
from orange.hosts.start import Started, choose, start_on
from orange.ops.create import Harnesses, create_and_spawn
from orange.projects import Project, open_store
from orange.store.task import Task


def create_on_host(
    project: Project,
    host_name: str,
    *,
    summary: str,
    branch: str | None,
    context: str | None,
    status: str | None,
    agents: Harnesses,
    json_out: bool,
    base: str | None = None,
    after: list[str] | None = None,
    budget: str | None = None,
) -> None:
    """Create a task here, parked (this host never starts it), then have ``host_name``
    start it.  A host that cannot be reached leaves the task parked here, and says so."""
    host = choose(project, host_name)  # checked before anything is written
    for agent in sorted({agents.worker, agents.reviewer} - {""}):
        if agent not in host.agents:
            raise InvalidInput(
                f"agent {agent} is not installed on host {host.name} (it has: "
                f"{', '.join(host.agents) or 'none'}, as it said when last checked)",
                hint=f"install it there, then `orange host check {host.name}`",
            )
    engine = build_engine(project)
    launch = create_and_spawn(
        engine,
        summary=summary,
        branch=branch,
        context=context,
        status=status,
        agents=agents,
        spawn=False,
        base=base,
        after=after,
        budget=budget,
        agents_elsewhere=True,
    )
    task = launch.created
    try:
        started = start_on(host, project, task.id)
    except Exception as exc:
        text = getattr(exc, "message", str(exc))
        print(
            f"orange: task {task.id} created but not started on host {host.name}: {text}; "
            f"start it there later with `orange task take {task.id} --host {host.name}`",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None
    _report(started, open_store(project).get(task.id), json_out, created=True)


def take_to_host(project: Project, task_id: str, host_name: str, json_out: bool) -> None:
    """Have ``host_name`` start ``task_id``, or take it over from where it runs."""
    host = choose(project, host_name)
    started = start_on(host, project, task_id)
    _report(started, open_store(project).get(task_id), json_out, created=False)


def _report(started: Started, task: Task, json_out: bool, *, created: bool) -> None:
    if json_out:
        obj = task_object(task)
        obj.update({"on_host": started.host.name, "messages": list(started.messages)})
        emit_json(obj)
        return
    if created:
        typer.echo(f"created task {task.id} on branch {task.branch}")
    typer.echo(f"task {task.id}: started on host {started.host.name} [{task.status}]")
    for line in started.messages:
        typer.echo(line)


def attach_remote(host: Host, project: Project, task_id: str) -> None:
    """``ssh -t`` to ``host`` and attach there (`orange.hosts.reach`)."""
    code = reach.attach(host, project, task_id)
    if code != 0:
        raise typer.Exit(code)


def peek_remote(host: Host, project: Project, task_id: str, lines: int, json_out: bool) -> None:
    """``orange task peek ID`` on ``host``, its output printed here."""
    answer = reach.peek(host, project, task_id, lines, json_out)
    sys.stdout.write(answer.out)
    sys.stderr.write(answer.err)
    if answer.code != 0:
        raise typer.Exit(answer.code)
