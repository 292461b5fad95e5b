"""A plain ``git merge`` in a tasks checkout makes exactly the sync's merge (the merge
driver of TASK.md), which the checker accepts; a refresh after it has nothing to do."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pygit2

from orange.engine.merging import plan_merge
from orange.engine.replay import check_history
from orange.engine.trust import trusted_here
from orange.store import layout
from orange.store.store import TaskStore
from orange.store.tree import apply_writes
from tests.conftest import git
from tests.sync.conftest import Clone


def test_a_plain_git_merge_in_a_tasks_checkout_is_the_sync_merge(
    clones: Callable[[int], list[Clone]], tmp_path: Path
) -> None:
    a, b = clones(2)
    shared = a.create("shared")
    a.ok("sync")
    b.ok("sync")
    a.ok("task", "update", shared, "--summary", "from a")
    a.ok("task", "edit", shared, "--section", "Notes", "--file", "-", stdin="a's note\n")
    a.ok("sync")
    b.ok("task", "update", shared, "--summary", "from b")
    b.ok("task", "edit", shared, "--section", "Notes", "--file", "-", stdin="b's note\n")
    checkout = tmp_path / "tasks-checkout"
    b.ok("tasks", "checkout", str(checkout))
    git(b.path, "fetch", "-q", "origin")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "-q", "refs/orange/remotes/origin/tasks"],
        cwd=checkout, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr + merged.stdout

    repo = TaskStore.open(b.path).pygit
    tip = repo.references[layout.TASKS_REF].peel(pygit2.Commit)
    ours, theirs = tip.parents
    expected = apply_writes(repo, ours.tree, plan_merge(repo, ours, theirs).tree_writes())
    assert tip.tree_id == expected
    assert check_history(repo, str(tip.id), str(ours.id), trusted=trusted_here) == []
    task = TaskStore.open(b.path).get(shared)
    assert "<<<<<<<" not in task.render()
    assert "a's note" in task.body and "b's note" in task.body
    refreshed = b.ok("tasks", "refresh", str(checkout), "--json").json()
    assert (refreshed["kept"], refreshed["conflicts"]) == ([], [])


def test_a_clean_merge_that_is_not_the_sync_merge_is_refused_by_pre_merge_commit(
    clones: Callable[[int], list[Clone]], tmp_path: Path
) -> None:
    a, b = clones(2)
    shared = a.create("shared")
    a.ok("sync")
    b.ok("sync")
    a.ok("task", "update", shared, "--summary", "from a")
    a.ok("sync")
    b.ok("task", "update", shared, "--summary", "from b")
    checkout = tmp_path / "tasks-checkout"
    b.ok("tasks", "checkout", str(checkout))
    git(b.path, "fetch", "-q", "origin")
    repo = TaskStore.open(b.path).pygit
    before = str(repo.references[layout.TASKS_REF].target)
    # a driver that keeps ours: a clean merge, but not Orange's
    merged = subprocess.run(
        ["git", "-c", "merge.orange.driver=true", "merge", "--no-edit", "-q",
         "refs/orange/remotes/origin/tasks"],
        cwd=checkout, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert merged.returncode != 0
    assert f"{layout.task_path(shared)}: the merge differs from Orange's merge" in merged.stderr
    assert str(repo.references[layout.TASKS_REF].target) == before
    assert git(checkout, "rev-parse", "HEAD").strip() == before


def test_a_merge_in_the_checkout_reaches_the_ref_while_a_fetch_into_it_works(
    clones: Callable[[int], list[Clone]], tmp_path: Path
) -> None:
    a, b = clones(2)
    shared = a.create("shared")
    a.ok("sync")
    b.ok("sync")
    checkout = tmp_path / "tasks-checkout"
    b.ok("tasks", "checkout", str(checkout))
    a.ok("task", "update", shared, "--summary", "from a")
    a.ok("sync")
    b.ok("task", "update", shared, "--summary", "from b")
    b.ok("tasks", "refresh", str(checkout))
    git(b.path, "fetch", "-q", "origin")
    git(checkout, "merge", "--no-edit", "-q", "refs/orange/remotes/origin/tasks")
    head = git(checkout, "rev-parse", "HEAD").strip()
    repo = TaskStore.open(b.path).pygit
    assert str(repo.references[layout.TASKS_REF].target) == head
    assert len(repo[head].peel(pygit2.Commit).parents) == 2
    # the ref is not the checkout's HEAD: a fast-forward fetch into it is allowed
    b.ok("sync")
    a.ok("sync")
    a.ok("task", "update", shared, "--summary", "from a again")
    a.ok("sync")
    git(b.path, "fetch", "-q", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}")
    refreshed = b.ok("tasks", "refresh", str(checkout), "--json").json()
    assert refreshed["new"] == git(checkout, "rev-parse", "HEAD").strip()
    assert TaskStore.open(b.path).get(shared).summary == "from a again"
