"""Packing the loose commits a sync will push, while it fetches and merges (DESIGN §7).

``git push`` reads each loose object several times as it packs them (its walk, the
sizes, the delta search, the pack itself).  The store packs its writes every 200 or
so (`orange.store.packing`); when at least `MIN_COMMITS` of the local commits not on
the remote (as last fetched) are still loose (written since, or by an Orange that did
not pack them), the sync starts ``git pack-objects`` on their loose objects, into the
repository's own packs, before it fetches: the fetch and the merge run meanwhile (on
the other core), and the push reuses that pack's objects and deltas.  Fewer loose
commits pack nothing first (a pack per sync would pile up).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from orange.runtime.git import git_started
from orange.store import layout
from orange.store.integrate import remote_ref

MIN_COMMITS = 100
# No hook of this repository; one thread (the fetch and the merge use the other core).
OPTIONS = ("-c", "core.hooksPath=/dev/null", "-c", "pack.threads=1")


def start(repo: pygit2.Repository, remote: str) -> subprocess.Popen[bytes] | None:
    """Start packing the loose objects of the local commits not on ``remote`` as last
    fetched, when at least `MIN_COMMITS` of those commits are loose (None: nothing
    started)."""
    local = repo.references.get(layout.TASKS_REF)
    if local is None:
        return None
    known = repo.references.get(remote_ref(remote))
    walker = repo.walk(local.target, pygit2.enums.SortMode.NONE)
    if known is not None:
        walker.hide(known.target)
    objects = Path(repo.path) / "objects"
    loose = 0
    for commit in walker:
        name = str(commit.id)
        loose += (objects / name[:2] / name[2:]).is_file()
        if loose >= MIN_COMMITS:
            break
    else:
        return None
    revs = f"{local.target}\n" + ("" if known is None else f"^{known.target}\n")
    args = ("pack-objects", "--revs", "--unpacked", "--quiet", "--delta-base-offset")
    return git_started(*OPTIONS, *args, str(objects / "pack" / "pack"), cwd=repo.path, input=revs)


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
