"""Bringing a fetched tip of the tasks ref in (DESIGN §7): fast-forward when behind,
one merge commit when diverged, nothing when ahead; compare-and-swap under the store's
lock, as every write of the ref.

The remote's tip is kept at ``refs/orange/remotes/<remote>/tasks`` (what the fetch
refspec writes); the merge itself is handed in (`orange.store.syncmerge.plan` with the
workflow's rules), so this module names no status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pygit2

from orange.errors import RefConflict
from orange.store import commitgraph, layout
from orange.store.lock import exclusive
from orange.store.store import TaskStore, _keep_reflog, _move_ref, _signature, _tip
from orange.store.syncmerge import VERSION, Plan, arrival
from orange.store.tree import apply_writes

REMOTES_PREFIX = "refs/orange/remotes"
Planner = Callable[[pygit2.Repository, pygit2.Commit, pygit2.Commit], Plan]


def remote_ref(remote: str) -> str:
    return f"{REMOTES_PREFIX}/{remote}/tasks"


class Outcome(NamedTuple):
    kind: str  # "none" (nothing to bring in), "fast-forward", "merge"
    plan: Plan | None  # what the merge did (a fast-forward: what came in)
    tip: str | None  # the local tip after


def integrate(store: TaskStore, theirs_id: str, remote: str, planner: Planner) -> Outcome:
    """Bring the commit ``theirs_id`` into the local tasks ref.  A history that came in
    long (a clone's first sync) starts the update of Orange's commit-graph, so that
    ``task log`` walks it quickly (`orange.store.commitgraph`)."""
    outcome = _bring(store, theirs_id, remote, planner)
    if outcome.kind != "none" and outcome.tip is not None:
        commitgraph.start_update(store.pygit, store.repo.orange_dir(), outcome.tip)
    return outcome


def _bring(store: TaskStore, theirs_id: str, remote: str, planner: Planner) -> Outcome:
    repo = store.pygit
    theirs = repo[theirs_id].peel(pygit2.Commit)
    with exclusive(store.repo.orange_dir() / "tasks.lock"):
        ref, ours = _tip(repo)
        if ours is not None and (ours.id == theirs.id or repo.descendant_of(ours.id, theirs.id)):
            return Outcome("none", None, str(ours.id))
        if ours is None or repo.descendant_of(theirs.id, ours.id):
            came = arrival(repo, theirs) if ours is None else planner(repo, ours, theirs)
            _swap(store, ref, theirs.id, f"sync: fast-forward to {remote}")
            return Outcome("fast-forward", came, str(theirs.id))
        plan = planner(repo, ours, theirs)
        writes = plan.tree_writes()
        tree = apply_writes(repo, ours.tree, writes) or repo.TreeBuilder().write()
        signature = _signature(repo)
        subject = plan.subject(remote)
        message = (
            f"{subject}\n\nOrange-Event: sync.merge\nOrange-Actor: sync\n"
            f"Orange-Merge: {VERSION}\nOrange-Remote: {remote}\n"
        )
        new = repo.create_commit(None, signature, signature, message, tree, [ours.id, theirs.id])
        _swap(store, ref, new, subject)
        return Outcome("merge", plan, str(new))


def rewind(store: TaskStore, commit: str) -> bool:
    """Take back ``commit``, a local write never pushed, if it is still the tip: the
    ref moves back to its parent (a start refused after its commit).  False when
    anything was written on top of it since (then it stays)."""
    repo = store.pygit
    with exclusive(store.repo.orange_dir() / "tasks.lock"):
        ref, tip = _tip(repo)
        if ref is None or tip is None or str(tip.id) != commit or len(tip.parent_ids) != 1:
            return False
        _swap(store, ref, tip.parent_ids[0], f"start refused: {commit[:10]} taken back")
        return True


def _swap(store: TaskStore, ref: pygit2.Reference | None, new: pygit2.Oid, why: str) -> None:
    _keep_reflog(store.repo.common_dir)
    if not _move_ref(store.pygit, ref, new, why):  # we hold the lock: plain git moved it
        raise RefConflict(f"{layout.TASKS_REF} moved during the sync", hint="run it again")
    store._wake()
