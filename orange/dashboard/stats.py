"""What a task's branch holds against the default branch: commits ahead, lines added and
removed (``3 +40 -2``).  Read with pygit2 in a worker thread (its own repository handle),
so the table never waits for it."""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

LIMIT = 500  # branches looked at per pass: the active tasks shown first


def branch_stats(repo: pygit2.Repository, base: str, branch: str) -> str:
    """``ahead +added -removed`` of ``branch`` over ``base`` ('' when either is missing)."""
    try:
        head = repo.branches.local.get(branch)
        default = repo.branches.local.get(base)
        if head is None or default is None:
            return ""
        ahead, _ = repo.ahead_behind(head.target, default.target)
        # None for unrelated histories, whatever the stubs say.
        fork: pygit2.Oid | None = repo.merge_base(head.target, default.target)
        if fork is None:
            return f"{ahead}"
        stats = repo.diff(fork, head.target).stats
    except (pygit2.GitError, KeyError, ValueError):
        return ""
    return f"{ahead} +{stats.insertions} -{stats.deletions}"


def all_stats(path: str, base: str, rows: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Stats by row key for ``rows`` (key, branch), from a repository handle of this
    thread's own."""
    repo = pygit2.Repository(path)
    out: dict[str, str] = {}
    for count, (key, branch) in enumerate(rows):
        if count >= LIMIT:
            break
        out[key] = branch_stats(repo, base, branch)
    return out
