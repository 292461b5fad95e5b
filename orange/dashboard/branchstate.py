"""What a task's branch holds against its base (``task create --base``, else the default
branch: commits ahead, lines added and removed: ``3 +40 -2``) and the state of its pull
request (``#7 open``, from gh), and the conflicts it would meet (`orange.runtime.conflicts`:
a mark in that column, the files in the task's detail line).  Read in a worker thread,
with a repository handle of its own, so the table never waits for git or GitHub."""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from orange import compose
from orange.errors import OrangeError
from orange.projects import Project, open_store
from orange.runtime.conflicts import predicted
from orange.store.branches import check_branch_name

LIMIT = 500  # branches looked at per pass: the active tasks shown first
CONFLICT_MARK = "✗"  # after a branch's stats: it would conflict (files in the detail)


def branch_stats(repo: pygit2.Repository, base: str, branch: str) -> str:
    """``ahead +added -removed`` of ``branch`` over ``base`` ('' when either is missing)."""
    if not base:
        return ""
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


def pr_cell(project: Project, url: str) -> str:
    """``#7 open ✓`` (its checks: ✓ passed, ✗ failed, ⏳ running), ``#7 merged`` or
    ``#7 closed`` (``#7 ?`` when gh cannot say)."""
    number = url.rstrip("/").rsplit("/", 1)[-1]
    label = f"#{number}" if number.isdigit() else "PR"
    try:
        state, checks = compose.gh().pr_view(project, url)
    except OrangeError:
        return f"{label} ?"
    if state == "OPEN" and checks:
        return f"{label} open {checks}"
    return f"{label} {state.lower()}"


def all_stats(
    project: Project, rows: Iterable[tuple[str, str, str, str]]
) -> dict[str, tuple[str, str]]:
    """(branch stats, PR state) by row key for ``rows`` (key, branch, PR url, base), from
    a repository handle of this thread's own."""
    repo = pygit2.Repository(project.path)
    out: dict[str, tuple[str, str]] = {}
    for count, (key, branch, url, base) in enumerate(rows):
        if count >= LIMIT:
            break
        pr = pr_cell(project, url) if url else ""
        out[key] = (branch_stats(repo, _base(project, base), branch), pr)
    return out


def conflict_notes(project: Project) -> dict[str, str]:
    """``main on a.py; task ID (BRANCH) on b.py`` by task id, for each active task of
    ``project`` whose branch would conflict (none when the project cannot be read)."""
    try:
        store = open_store(project)
    except OrangeError:
        return {}
    found = predicted(store, store.snapshot(), project)
    return {
        task_id: "; ".join(clash.text() for clash in clashes) for task_id, clashes in found.items()
    }


def _base(project: Project, base: str) -> str:
    """The task's base as the ref says (shared data: a bad name counts as none)."""
    try:
        return check_branch_name(base) if base else project.default_branch
    except OrangeError:
        return ""
