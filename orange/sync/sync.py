"""One ``orange sync``: fetch, bring in, push; a push that lost a race is retried
after fetching and merging again (bounded, jittered)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import Popen
from typing import TYPE_CHECKING, Any, NamedTuple

import pygit2

from orange.engine.forgery import verify_new
from orange.engine.merging import plan_merge
from orange.engine.trust import trusted_here
from orange.errors import RefConflict
from orange.projects import Project, open_store
from orange.store import layout
from orange.store.integrate import integrate
from orange.store.store import TaskStore
from orange.store.treediff import changed_blobs
from orange.sync import packing as prepack
from orange.sync import remote as git_remote
from orange.sync.effects import release_ended
from orange.sync.stamp import mark_synced

if TYPE_CHECKING:
    from orange.runtime.tmux import Tmux

ATTEMPTS = 6


class Synced(NamedTuple):
    """What one sync did, for people and for ``--json``."""

    remote: str
    incoming: tuple[str, ...]  # tasks changed there, now here
    outgoing: tuple[str, ...]  # tasks changed here, now there
    conflicts: dict[str, tuple[str, ...]]  # task id → what needed a rule
    merges: tuple[str, ...]  # merge commits written
    pushed: bool
    local: tuple[str, ...] = ()  # what this host did about tasks that ended elsewhere

    def as_json(self) -> dict[str, Any]:
        data = self._asdict()
        data["conflicts"] = {k: list(v) for k, v in self.conflicts.items()}
        return data


def sync_project(
    project: Project, remote: str | None = None, *, tmux: Callable[[], Tmux]
) -> Synced:
    """`sync` with ``remote`` (default: the project's, `git_remote.default_remote`),
    then the replay of what came in (`orange.engine.forgery.verify_new`) and the local
    effects of what stands after it (`orange.sync.effects`)."""
    store = open_store(project)
    path, branch = Path(project.path), project.default_branch
    name = remote or git_remote.default_remote(path, branch, store.pygit)
    result = sync(store, name)
    mark_synced(store)
    # What came in is replayed before anything here acts on it: a forged move from a
    # remote without Orange's server hook (a peer) is restored, not carried out.
    said = verify_new(store, trusted=trusted_here, actor="sync").lines()
    store._wake()  # the remote-tracking ref moved too (git ran no hook of ours)
    return result._replace(
        local=(*said, *release_ended(project, store, result.incoming, tmux=tmux))
    )


def sync(store: TaskStore, remote: str, bound: float | None = None) -> Synced:
    """Exchange tasks with ``remote`` until both hold the same tip (or a bound is hit:
    ``bound``, seconds for the whole exchange, raises `Unreachable` when spent)."""
    deadline = None if bound is None else time.monotonic() + bound
    git_remote.require_remote(_cwd(store), remote, store.pygit)
    packing = prepack.start(store.pygit, remote)  # many local commits: packed meanwhile
    try:
        return _exchange(store, remote, deadline, packing)
    finally:
        prepack.finish(packing, _left(deadline, strict=False))


def _exchange(
    store: TaskStore, remote: str, deadline: float | None, packing: Popen[bytes] | None
) -> Synced:
    incoming: set[str] = set()
    outgoing: set[str] = set()
    conflicts: dict[str, tuple[str, ...]] = {}
    merges: list[str] = []
    for attempt in range(ATTEMPTS):
        theirs = git_remote.fetch(store.pygit, remote, _left(deadline))
        local = _local_tip(store)
        if theirs is not None:
            outcome = integrate(store, theirs, remote, plan_merge)
            if outcome.plan is not None:
                incoming.update(outcome.plan.incoming)
                conflicts.update(outcome.plan.conflicts)
            if outcome.kind == "merge" and outcome.tip:
                merges.append(outcome.tip)
            local = outcome.tip
        if local is None or local == theirs:
            return Synced(remote, _s(incoming), _s(outgoing), conflicts, tuple(merges), False)
        outgoing.update(_outgoing(store, local, theirs))
        prepack.finish(packing, _left(deadline))
        if git_remote.push(store.pygit, remote, _left(deadline)):
            return Synced(remote, _s(incoming), _s(outgoing), conflicts, tuple(merges), True)
        time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
    raise RefConflict(
        f"the tasks on {remote!r} kept moving; gave up after {ATTEMPTS} attempts",
        hint="run `orange sync` again",
    )


def _left(deadline: float | None, *, strict: bool = True) -> float | None:
    """Seconds left before ``deadline`` (None: no bound; spent: raises, or 0 when not
    ``strict``)."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        if not strict:
            return 0.0
        raise git_remote.Unreachable("the remote did not answer in time")
    return left


def _s(items: set[str]) -> tuple[str, ...]:
    return tuple(sorted(items))


def _cwd(store: TaskStore) -> Path:
    return store.repo.workdir or store.repo.common_dir


def _local_tip(store: TaskStore) -> str | None:
    ref = store.pygit.references.get(layout.TASKS_REF)
    return None if ref is None else str(ref.target)


def _outgoing(store: TaskStore, local: str, theirs: str | None) -> set[str]:
    """The tasks the push carries: changed from the remote's tip to ours."""
    repo = store.pygit
    new = repo[local].peel(pygit2.Commit)
    old = repo[theirs].peel(pygit2.Commit).tree if theirs is not None else None
    paths = changed_blobs(repo, old, new.tree)
    return {p.split("/")[2] for p in paths if p.startswith("tasks/") and p.count("/") >= 3}
