"""Packing the commits a sync will push, while it fetches and merges (DESIGN §7).

Every write of the store leaves its objects loose (six files for a task's update), and
``git push`` reads each loose object several times as it packs them: for a thousand
commits made offline, most of a sync.  So when at least `MIN_COMMITS` local commits
are not on the remote (as last fetched), the sync starts ``git pack-objects`` on them,
into the repository's own packs, before it fetches; the fetch and the merge run
meanwhile, and the push reuses that pack's objects and deltas.  A smaller push packs
nothing first (a pack per sync would pile up); the loose copies stay until ``git gc``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from orange.hooks.git import git_started
from orange.store import layout
from orange.store.integrate import remote_ref

MIN_COMMITS = 100
# No hook of this repository; one thread (the fetch and the merge use the other core).
OPTIONS = ("-c", "core.hooksPath=/dev/null", "-c", "pack.threads=1")


def start(repo: pygit2.Repository, remote: str) -> subprocess.Popen[bytes] | None:
    """Start packing the local commits not on ``remote`` as last fetched, when there
    are at least `MIN_COMMITS` of them (None: nothing started)."""
    local = repo.references.get(layout.TASKS_REF)
    if local is None:
        return None
    known = repo.references.get(remote_ref(remote))
    walker = repo.walk(local.target, pygit2.enums.SortMode.NONE)
    if known is not None:
        walker.hide(known.target)
    if sum(1 for _, _ in zip(walker, range(MIN_COMMITS), strict=False)) < MIN_COMMITS:
        return None
    revs = f"{local.target}\n" + ("" if known is None else f"^{known.target}\n")
    pack = Path(repo.path) / "objects" / "pack" / "pack"
    args = ("pack-objects", "--revs", "--quiet", "--delta-base-offset", str(pack))
    return git_started(*OPTIONS, *args, cwd=repo.path, input=revs)


def finish(process: subprocess.Popen[bytes] | None, timeout: float | None) -> None:
    """Wait for the packing (at most ``timeout`` seconds, then stop it): the push
    reads what it did not pack from the loose objects."""
    if process is None:
        return
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
