"""``reference-transaction``: git itself moved ``refs/orange/*``; wake the monitor.

Git runs this hook (through the shim, in the background) for every fetch, push,
update-ref or plain commit that touches ``refs/orange/*``, so it is a process of its
own each time: it loads only the repository, the project registry and the monitor's
starter, never the engine or the CLI (`orange.cli.fast` sends it here directly).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from orange.projects import find_for_repo
from orange.runtime import watcher as monitor
from orange.store.repo import GitRepo, open_repo
from orange.store.store import now_iso


def wake_monitor(repo: GitRepo) -> None:
    """Tell the monitor that git itself moved ``refs/orange/*``: a line appended to
    ``<git-common-dir>/orange/wake``."""

    with (repo.orange_dir() / "wake").open("a") as handle:
        handle.write(f"{now_iso()} {os.getpid()}\n")


def reference_transaction(cwd: Path, args: Sequence[str]) -> int:
    if args and args[0] != "committed":
        return 0
    repo = open_repo(cwd)
    wake_monitor(repo)
    # A fetch or update-ref may need a reaction while no monitor runs (it exits when
    # idle): start one for a registered project.
    if find_for_repo(repo) is not None:
        monitor.ensure_running()
    return 0
