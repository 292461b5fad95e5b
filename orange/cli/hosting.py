"""The ``--host`` side of ``task create``, ``task take``, ``task attach`` and ``task
peek``: the task runs, or is to run, on another registered host (`orange.hosts`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import typer

from orange.cli.output import emit_json, task_object
from orange.compose import build_engine
from orange.errors import InvalidInput
from orange.hosts import registry
from orange.hosts.probe import now
from orange.hosts.registry import Host
from orange.hosts.start import Started, choose, start_on
from orange.ops.launch import Harnesses, create_and_spawn
from orange.projects import Project, open_store
from orange.runtime import ssh
from orange.store.layout import valid_task_id
from orange.store.task import Task

T = TypeVar("T")


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
) -> None:
    """Create a task here, parked (this host never starts it), then have ``host_name``
    start it.  A host that cannot be reached leaves the task parked here, and says so."""
    host = choose(project, host_name)  # checked before anything is written
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


def host_of(task: Task) -> Host | None:
    """The registered host the task runs on, found by the ``host`` field (a key into
    this host's configuration, never a target); None when no entry records itself so."""
    return registry.by_reported(task.str_field("host"))


def attach_remote(host: Host, project: Project, task_id: str) -> None:
    """``ssh -t`` to ``host`` and attach there (``orange task attach ID``: that host's
    Orange knows its tmux socket and its session)."""
    there = _there(host, project, task_id)
    code = _marked(host, lambda: ssh.run_terminal(host.ssh(), ["task", "attach", *there]))
    if code != 0:
        raise typer.Exit(code)


def peek_remote(host: Host, project: Project, task_id: str, lines: int, json_out: bool) -> None:
    """``orange task peek ID`` on ``host``, its output printed here."""
    args = ["task", "peek", *_there(host, project, task_id), "--lines", str(lines)]
    args += ["--json"] if json_out else []
    answer = _marked(host, lambda: ssh.run(host.ssh(), args, timeout=60))
    sys.stdout.write(answer.out)
    sys.stderr.write(answer.err)
    if answer.code != 0:
        raise typer.Exit(answer.code)


def _there(host: Host, project: Project, task_id: str) -> list[str]:
    if not valid_task_id(task_id):
        raise InvalidInput(f"not a task id: {task_id!r}")
    name = host.remote_project(project.name)
    if name is None:
        raise InvalidInput(f"host {host.name} is not set up for project {project.name}")
    return [task_id, "--project", name]


def _marked(host: Host, call: Callable[[], T]) -> T:
    try:
        result = call()
    except ssh.HostUnreachable:
        registry.mark(host.name, reachable=False, now=now())
        raise
    registry.mark(host.name, reachable=True, now=now())
    return result
