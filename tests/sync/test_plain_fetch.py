"""A plain `git fetch` never moves this clone's tasks ref past the replay: the fetch
refspec Orange configures writes only ``refs/orange/remotes/<remote>/task*`` (a peer's
``refs/orange/tasks2`` too lands there, where nothing reads it), and a refspec a user
writes into ``refs/orange/tasks`` itself is a move by git like ``update-ref``: the
replay (the monitor's pass, which git's reference-transaction hook wakes) restores
what it brought."""

from __future__ import annotations

from pathlib import Path

from orange.engine.forgery import verify_new
from orange.engine.trust import trusted_here
from tests.conftest import Cli, git
from tests.githooks.test_forgery import PUSH, forge_fields, tip
from tests.hostile import peer_project, teammate_clone_of

REFS = ("refs/orange/tasks", "refs/orange/tasks2")


def test_a_plain_fetch_of_a_forged_tasks_ref_reaches_it_only_through_the_replay(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    _project, store, task_id, peer = peer_project(cli, repo, tmp_path)
    legal = tip(repo)

    theirs = teammate_clone_of(peer, tmp_path)
    forged = forge_fields(theirs, task_id, status="done")
    git(theirs, "push", "-q", "origin", *(f"{PUSH.split(':')[0]}:{ref}" for ref in REFS))

    git(repo, "fetch", "-q", "origin")  # Orange's refspec
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/orange")
    assert set(refs.splitlines()) == {
        f"refs/orange/tasks {legal}",
        f"refs/orange/remotes/origin/tasks {forged}",
        f"refs/orange/remotes/origin/tasks2 {forged}",
    }

    git(repo, "fetch", "-q", "origin", "+refs/orange/tasks:refs/orange/tasks")  # a user's
    assert tip(repo) == forged
    found = verify_new(store, trusted=trusted_here, actor="monitor")
    assert [v.commit for v in found.restored] == [forged]
    assert store.get(task_id).status == "pending"
