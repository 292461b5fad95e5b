"""The monitor's look at the hosts: every `CHECK_EVERY` seconds, each registered host
that holds an active task of a project here (judged from the ref) is asked over SSH
whether it answers (``orange --version`` there), so its tasks show "host unreachable
since T" while it does not, without anyone running a command at it."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from orange import projects
from orange.errors import OrangeError
from orange.home import orange_home
from orange.hosts import roster
from orange.hosts.reach import marked
from orange.hosts.start import bound_per_host
from orange.runtime import ssh

CHECK_EVERY = 60.0  # seconds between two looks at the hosts
STAMP = "hosts.checked"  # in $ORANGE_HOME: its mtime is the last look


def watch(log: Callable[[str], None], now: float | None = None) -> float:
    """Look at the hosts if due; the seconds until the next look."""
    stamp = orange_home() / STAMP
    now = time.time() if now is None else now
    try:
        left = stamp.stat().st_mtime + CHECK_EVERY - now
    except OSError:
        left = 0.0
    if left > 0:
        return left
    try:
        hosts = roster.load_all()
    except OrangeError as exc:
        log(f"hosts: {exc.message}")
        return CHECK_EVERY
    if not hosts:
        return CHECK_EVERY
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()
    busy = _holding()
    for host in hosts:
        if host.reports_as not in busy:
            continue
        try:
            marked(host, partial(ssh.run, host.ssh(), ["--version"], timeout=30))
        except ssh.HostUnreachable as exc:
            log(exc.message)
    return CHECK_EVERY


def _holding() -> set[str]:
    """The host names the ref shows holding an active task, in any project here."""
    found: set[str] = set()
    for project in projects.load_all():
        try:
            found |= {name for name, count in bound_per_host(project).items() if count}
        except OrangeError:
            continue
    return found
