"""Reaching a task that runs on a registered host: its session (``ssh -t`` and that
host's ``orange task attach``, which knows its tmux socket and session) and its output
(that host's ``orange task peek``).  What goes over SSH is the task's validated id and
the project's name there, from this host's configuration; whether the host answered
is remembered (``host unreachable since``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from orange.errors import InvalidInput
from orange.hosts import roster
from orange.hosts.roster import Host, now
from orange.projects import Project
from orange.runtime import ssh
from orange.store.layout import valid_task_id
from orange.store.task import Task

T = TypeVar("T")


def host_of(task: Task) -> Host | None:
    """The registered host the task runs on, found by the ``host`` field (a key into
    this host's configuration, never a target); None when no entry records itself so."""
    return roster.by_reported(task.str_field("host"))


def attach(host: Host, project: Project, task_id: str) -> int:
    """Attach this terminal to the task's session on ``host``; the exit status."""
    args = ["task", "attach", *_there(host, project, task_id)]
    return marked(host, lambda: ssh.run_terminal(host.ssh(), args))


def peek(host: Host, project: Project, task_id: str, lines: int, json_out: bool) -> ssh.Answer:
    """``orange task peek ID`` on ``host``: its exit status and output."""
    args = ["task", "peek", *_there(host, project, task_id), "--lines", str(lines)]
    args += ["--json"] if json_out else []
    return marked(host, lambda: ssh.run(host.ssh(), args, timeout=60))


def _there(host: Host, project: Project, task_id: str) -> list[str]:
    if not valid_task_id(task_id):
        raise InvalidInput(f"not a task id: {task_id!r}")
    name = host.remote_project(project.name)
    if name is None:
        raise InvalidInput(f"host {host.name} is not set up for project {project.name}")
    return [task_id, "--project", name]


def marked(host: Host, call: Callable[[], T]) -> T:
    """``call``, remembering whether ``host`` answered."""
    try:
        result = call()
    except ssh.HostUnreachable:
        roster.mark(host.name, reachable=False, now=now())
        raise
    roster.mark(host.name, reachable=True, now=now())
    return result
