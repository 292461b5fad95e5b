"""Starting a task on another host, or moving one there (DESIGN §7, §11).

Here (`start_on`): the task is in the ref, pushed with a sync; then one SSH round trip
asks the host to start it: ``orange host start ID --project P --json`` there, with the
task's validated id and the project's name there (from this host's configuration).
There (`start_here`): its Orange syncs, turns its automatic sync on if it was off, and
starts the task as its own human would (``orange task spawn``, or ``orange task take``
when the task is bound to another host): its own pool, tmux, monitor and local binding
records, and the claim that makes one host the task's runner.  Back here a sync brings
the binding in, so `task list` shows where it runs; a task this host ran, now taken
there, is ended here by that sync, its work snapshotted first (`orange.sync.effects`).

``auto`` picks the registered host with the most free worktrees for the project, judged
from the ref (its pool size, as it last reported it, less the active tasks bound to it).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from orange import compose, projects
from orange.compose import build_engine
from orange.engine.decide import Outcome
from orange.engine.definitions import is_active
from orange.engine.elsewhere import running_elsewhere
from orange.errors import InvalidInput, OrangeError
from orange.home import host_name
from orange.hosts import roster
from orange.hosts.roster import Host, now
from orange.projects import Project, open_store
from orange.runtime import ssh
from orange.store.layout import valid_task_id
from orange.store.listing import all_tasks
from orange.store.task import Task
from orange.sync.remote import project_remote
from orange.sync.sync import sync_project
from orange.sync.take import take_task

AUTO = "auto"
HOST_SYNC_INTERVAL = 5  # seconds: a host's automatic sync, turned on when it was off


class Started(NamedTuple):
    host: Host
    messages: tuple[str, ...]
    answer: dict[str, Any]  # what the host said (``--json`` of `start_here`)


def choose(project: Project, name: str) -> Host:
    """The registered host ``name`` (or the best one for ``auto``), checked to know
    ``project``: registered for it with `orange host add`."""
    if name != AUTO:
        host = roster.get(roster.check_name(name))
        if host.remote_project(project.name) is None:
            raise InvalidInput(
                f"host {host.name} is not set up for project {project.name}",
                hint=f"run `orange host add {host.name} {host.target} --project {project.name}`",
            )
        return host
    candidates = [h for h in roster.load_all() if h.remote_project(project.name)]
    if not candidates:
        raise InvalidInput(
            f"no host is registered for project {project.name}",
            hint="add one with `orange host add NAME SSH_TARGET`",
        )
    used = bound_per_host(project)
    ranked = sorted(
        candidates, key=lambda h: (-(h.pool_size(project.name) - used.get(h.reports_as, 0)), h.name)
    )
    best = ranked[0]
    if best.pool_size(project.name) - used.get(best.reports_as, 0) <= 0:
        raise InvalidInput(
            f"every host of project {project.name} has a full pool",
            hint="wait for a task to finish, or name a host with --host NAME",
        )
    return best


def bound_per_host(project: Project) -> dict[str, int]:
    """How many active tasks the ref shows bound to each host name."""
    store = open_store(project)
    snap = store.snapshot()
    counts: dict[str, int] = {}
    for task in all_tasks(store):
        if not isinstance(task, Task) or not task.str_field("workspace"):
            continue
        if is_active(snap, task):
            host = task.str_field("host")
            counts[host] = counts.get(host, 0) + 1
    return counts


def start_on(host: Host, project: Project, task_id: str) -> Started:
    """Have ``host`` start (or take over) ``task_id``: push it, ask the host, bring
    back what it did.  Unreachable: one line, and nothing changed here."""
    if not valid_task_id(task_id):
        raise InvalidInput(f"not a task id: {task_id!r}")
    there = host.remote_project(project.name)
    if there is None:
        raise InvalidInput(f"host {host.name} is not set up for project {project.name}")
    remote = project_remote(project)
    if remote is None:
        raise InvalidInput(
            f"project {project.name} has no sync remote: a host finds its tasks there",
            hint="add one (`git remote add origin URL`) and run `orange sync --setup`",
        )
    sync_project(project, remote, tmux=compose.tmux)
    args = ["host", "start", task_id, "--project", there, "--json"]
    try:
        answer = ssh.run(host.ssh(), args, timeout=180)
    except ssh.HostUnreachable:
        roster.mark(host.name, reachable=False, now=now())
        raise
    roster.mark(host.name, reachable=True, now=now())
    data = _json(answer.out)
    if answer.code != 0 or data is None:
        said = [line.strip() for line in answer.err.splitlines() if line.strip()]
        why = said[-1].removeprefix("orange: ") if said else f"exit status {answer.code}"
        raise InvalidInput(f"host {host.name} did not start task {task_id}: {why}")
    messages = [str(m) for m in data.get("messages") or [] if isinstance(m, str)]
    try:
        synced = sync_project(project, remote, tmux=compose.tmux)
        messages += list(synced.local)
    except OrangeError as exc:
        messages.append(f"warning: not synced back from {remote}: {exc.message}")
    return Started(host, tuple(messages), data)


def start_here(project_name: str, task_id: str) -> Outcome:
    """The host's side: sync, then start ``task_id`` here (spawn, or take it over from
    the host it is bound to), as this host's human would."""
    if not valid_task_id(task_id):
        raise InvalidInput(f"not a task id: {task_id!r}")
    project = projects.get(project_name)
    if project.sync_interval <= 0:
        project = projects.update(project.name, sync_interval=HOST_SYNC_INTERVAL)
    sync_project(project, tmux=compose.tmux)
    engine = build_engine(project)
    task = engine.store.get(task_id)
    snap = engine.store.snapshot()
    if running_elsewhere(task, active=is_active(snap, task), here=host_name()):
        return take_task(engine, task.id)
    return engine.spawn(task.id, options={"explicit": True})


def _json(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
