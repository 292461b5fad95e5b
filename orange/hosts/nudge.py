"""Telling the hosts at once: after a person's command here changed a project's tasks
(a merge, a cancel, a take, an edit), the registered hosts of that project sync now
instead of at their next automatic sync.

`after_command` is all the command pays: a look at the host list (nothing registered:
one ``stat``) and at each served project's wake file (touched by every write of its
tasks ref); where the ref moved during the command it starts, detached, a background
``orange host nudge --project P`` and returns.  That process pushes the project's tasks
(a sync here), then asks each registered host of the project over SSH to sync
(``orange sync --project THERE``), with a short connect timeout and a bound on the
whole call: an unreachable host costs that process a few seconds, never the person's
command, and is remembered as such ("host unreachable since T").  What goes over SSH
is the host's entry and the project's name there, from this host's configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial

from orange import compose, projects
from orange.errors import OrangeError
from orange.home import orange_home
from orange.hosts import roster
from orange.hosts.reach import marked
from orange.hosts.roster import Host
from orange.projects import Project
from orange.runtime import ssh
from orange.sync.remote import project_remote
from orange.sync.sync import sync_project

CONNECT_TIMEOUT = 5  # seconds ssh may take to connect to a host being nudged
TIMEOUT = 60.0  # seconds the whole call to one host may take


def after_command(started: float) -> None:
    """Start a background nudge for each project whose tasks ref moved since
    ``started`` (a time.time()) and that a registered host serves.  Never raises."""
    try:
        if not roster.path().is_file():
            return
        served = {name for host in roster.load_all() for name, _there in host.projects}
        for project in projects.load_all():
            if project.name in served and _moved_since(project, started):
                _start(project.name)
    except (OrangeError, OSError):
        return


def _moved_since(project: Project, started: float) -> bool:
    try:
        return (project.repo().orange_dir() / "wake").stat().st_mtime >= started
    except (OrangeError, OSError):
        return False


def _start(project: str) -> None:
    logs = orange_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "nudge.log", "a") as out:  # what failed, for a person to read
        subprocess.Popen(
            [sys.executable, "-P", "-m", "orange", "host", "nudge", "--project", project],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("ORANGE_TASK")},
        )


def nudge(project: Project, say: Callable[[str], None]) -> int:
    """Push ``project``'s tasks, then have each registered host of it sync; the number
    of hosts that answered.  Each failure is one line to ``say``."""
    hosts = [h for h in roster.load_all() if h.remote_project(project.name)]
    remote = project_remote(project)
    if not hosts or remote is None:
        return 0
    try:
        sync_project(project, remote, tmux=compose.tmux)
    except OrangeError as exc:
        say(f"{project.name}: not pushed to {remote}: {exc.message}")
        return 0
    answered = 0
    for host in hosts:
        try:
            answer = marked(host, partial(_ask, host, project))
        except ssh.HostUnreachable as exc:
            say(exc.message)
            continue
        answered += 1
        if answer.code != 0:
            said = [line.strip() for line in answer.err.splitlines() if line.strip()]
            say(f"host {host.name}: sync there failed: {said[-1] if said else answer.code}")
    return answered


def _ask(host: Host, project: Project) -> ssh.Answer:
    there = host.remote_project(project.name) or project.name
    return ssh.run(
        host.ssh(),
        ["sync", "--project", there],
        timeout=TIMEOUT,
        connect_timeout=CONNECT_TIMEOUT,
    )
