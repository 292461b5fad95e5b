"""``pre-merge-commit`` in a tasks checkout: a clean ``git merge`` there runs this hook,
not ``pre-commit`` (DESIGN §7).

The merge is refused when the checkout is behind the ref (unless the ref's own tip is
what is merged in), when its tree is not exactly the sync's merge of the two commits
(`orange.engine.merging.plan_merge`, what the TASK.md merge driver makes), or when the
history it brings in leaves an illegal step (the replay checker).  A merge made with
``--no-verify`` is still replayed once it reaches the ref (``post-merge``, the monitor).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pygit2

from orange.engine.merging import plan_merge
from orange.engine.replay import check_history
from orange.engine.trust import trusted_here
from orange.githooks import checkout as taskscheckout
from orange.githooks.mergedriver import merged_head
from orange.runtime.git import git
from orange.store import layout
from orange.store.repo import GitRepo, open_repo
from orange.store.tree import apply_writes
from orange.store.treediff import changed_blobs

STALE = (
    "the tasks checkout is behind refs/orange/tasks (Orange wrote since); "
    "run: orange tasks refresh, then merge again"
)


def pre_merge_commit(cwd: Path, args: Sequence[str] = ()) -> int:
    repo = open_repo(cwd)
    if not taskscheckout.is_tasks_checkout(repo):
        return 0
    problems = check_merge(repo, merged_head(cwd))
    for problem in problems:
        print(f"orange: {problem}", file=sys.stderr)
    return 1 if problems else 0


def check_merge(repo: GitRepo, theirs_id: str) -> list[str]:
    """Why the merge staged in a tasks checkout cannot be committed ([] if it can)."""
    if not theirs_id:
        return ["the merge hook runs only inside `git merge`"]
    tip = taskscheckout.tasks_tip(repo)
    head = taskscheckout.head_commit(repo)
    fresh = head == tip == taskscheckout.recorded_tip(repo)
    if not fresh and theirs_id != tip:
        return [STALE]
    assert repo.workdir is not None and head is not None
    pygit = repo.pygit
    ours = pygit[head].peel(pygit2.Commit)
    theirs = pygit[theirs_id].peel(pygit2.Commit)
    index = os.environ.get("GIT_INDEX_FILE")  # the index git is committing
    env = {"GIT_INDEX_FILE": os.path.abspath(index)} if index else {}
    staged = pygit[git("write-tree", cwd=repo.workdir, env=env)].peel(pygit2.Tree)
    writes = plan_merge(pygit, ours, theirs).tree_writes()
    expected_id = apply_writes(pygit, ours.tree, writes)
    expected = pygit[expected_id].peel(pygit2.Tree) if expected_id else ours.tree
    problems = [
        f"{path}: the merge differs from Orange's merge ({layout.TASKS_REF} sync); "
        "commit only what the merge made"
        for path in sorted(changed_blobs(pygit, expected, staged))
    ]
    for violation in check_history(pygit, theirs_id, head, trusted=trusted_here):
        if not violation.untrusted:
            problems.append(f"brings in an illegal step: {violation}")
    return problems
