"""The checker accepts a merge commit only if it holds the sync merge of its parents:
on the hub's ``update`` hook and in this host's replay of what arrived."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pygit2

from orange.engine.replay import check_history
from orange.engine.trust import trusted_here
from orange.store import layout
from orange.store.store import TaskStore
from orange.store.syncmerge import plan
from orange.store.taskmerge import Rules
from orange.store.tree import apply_writes
from tests.conftest import git
from tests.sync.conftest import Clone

REMOTE = "refs/orange/remotes/origin/tasks"


def test_a_hand_made_merge_is_rejected_with_a_one_line_reason(
    clones: Callable[[int], list[Clone]], hub: Path
) -> None:
    a, b = clones(2)
    shared = a.create("shared")
    a.ok("sync")
    b.ok("sync")
    a.ok("task", "update", shared, "--summary", "from a")
    a.ok("sync")
    b.ok("task", "update", shared, "--summary", "from b")
    git(b.path, "fetch", "-q", "origin")  # the refspec project add set
    ours = git(b.path, "rev-parse", layout.TASKS_REF).strip()
    theirs = git(b.path, "rev-parse", REMOTE).strip()
    # "git merge -s ours": our tree, both parents (the summary conflict ignored)
    tree = git(b.path, "rev-parse", f"{ours}^{{tree}}").strip()
    forged = git(b.path, "commit-tree", tree, "-p", ours, "-p", theirs, "-m", "merge").strip()
    git(b.path, "update-ref", layout.TASKS_REF, forged)

    repo = TaskStore.open(b.path).pygit
    found = check_history(repo, forged, theirs, trusted=trusted_here)
    path = layout.task_path(shared)
    assert [v.reason for v in found] == [
        f"merge commit differs from Orange's merge of its parents at {path}"
    ]
    pushed = subprocess.run(
        ["git", "push", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}"],
        cwd=b.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert pushed.returncode != 0
    assert f"task {shared}: merge commit differs from Orange's merge" in pushed.stderr
    # Orange's own merge of the same parents is accepted
    git(b.path, "update-ref", layout.TASKS_REF, ours)
    b.ok("sync")
    tip = git(hub, "rev-parse", layout.TASKS_REF).strip()
    assert TaskStore.open(hub).get(shared).summary in ("from a", "from b")
    assert check_history(TaskStore.open(hub).pygit, tip, trusted=trusted_here) == []


def _commit(
    repo: pygit2.Repository, parent: pygit2.Commit | None, writes: dict[str, bytes]
) -> pygit2.Commit:
    tree = apply_writes(repo, parent.tree if parent else None, writes)
    assert tree is not None
    who = pygit2.Signature("t", "t@example.com", 1000, 0)
    parents = [parent.id] if parent else []
    return repo[repo.create_commit(None, who, who, "c", tree, parents)].peel(pygit2.Commit)


def _merged(
    repo: pygit2.Repository, ours: pygit2.Commit, theirs: pygit2.Commit
) -> dict[str, bytes]:
    """The workflow files of the merged tree (``ours`` plus the plan's writes)."""
    files = {
        f"meta/workflows/{entry.name}": entry.read_raw()
        for entry in ours.tree["meta/workflows"]  # type: ignore[union-attr]
    }
    for path, data in plan(repo, ours, theirs, Rules(terminal=lambda task: False)).writes.items():
        if data is None:
            files.pop(path, None)
        else:
            files[path] = data
    return files


def test_a_workflow_committed_differently_on_both_sides_keeps_both(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    base = _commit(repo, None, {"meta/schema": b"1\n"})
    one, two = b"name: custom\n# one\n", b"name: custom\n# two\n"
    ours = _commit(repo, base, {"meta/workflows/custom.yml": one})
    theirs = _commit(repo, base, {"meta/workflows/custom.yml": two})
    first, second = sorted((one, two), key=lambda t: hashlib.sha1(t).hexdigest())
    variant = f"meta/workflows/custom@{hashlib.sha1(second).hexdigest()[:10]}.yml"
    expected = {"meta/workflows/custom.yml": first, variant: second}
    assert _merged(repo, ours, theirs) == _merged(repo, theirs, ours) == expected


def test_a_folder_changed_on_their_side_only_is_their_tree(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    one, two, both = "tasks/aa/one", "tasks/aa/two", "tasks/bb/both"
    base = _commit(repo, None, {f"{p}/TASK.md": b"base\n" for p in (one, two, both)})
    ours = _commit(repo, base, {f"{two}/TASK.md": b"ours\n", f"{both}/notes": b"ours\n"})
    theirs = _commit(
        repo,
        base,
        {f"{one}/TASK.md": b"theirs\n", f"{one}/extra": b"new\n", f"{both}/TASK.md": b"x\n"},
    )
    made = plan(repo, ours, theirs, Rules(terminal=lambda task: False))
    assert made.folders == {one: theirs.tree[one].id}  # `both` changed on our side too
    assert set(made.writes) == {f"{both}/TASK.md"}  # their folder's files are not read
    whole = apply_writes(repo, ours.tree, made.tree_writes())
    by_files = {f"{one}/TASK.md": b"theirs\n", f"{one}/extra": b"new\n", **made.writes}
    assert whole == apply_writes(repo, ours.tree, by_files)  # what a merge file by file makes
    assert whole is not None and repo[whole].peel(pygit2.Tree)[one].id == theirs.tree[one].id


def test_a_folder_replaced_by_a_file_is_merged_file_by_file(tmp_path: Path) -> None:
    """A task folder one side replaced by a file is no folder to take whole (the replay
    refuses such a commit; the plan stays file by file there): their replacement is
    planned as its deletions and the file; a folder replaced by a file on our side and
    changed on theirs is merged file by file."""
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    one, two = "tasks/aa/one", "tasks/bb/two"
    base = _commit(repo, None, {f"{p}/TASK.md": b"base\n" for p in (one, two)})
    ours = _commit(repo, base, {two: b"a file\n"})
    theirs = _commit(repo, base, {one: b"a file\n", f"{two}/TASK.md": b"x\n"})
    made = plan(repo, ours, theirs, Rules(terminal=lambda task: False))
    assert made.folders == {}
    assert made.writes[one] == theirs.tree[one].id and made.writes[f"{one}/TASK.md"] is None
    assert f"{two}/TASK.md" in made.writes
