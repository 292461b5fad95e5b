"""Never lose work: find unsaved work in a worktree, save it, put it back."""

from __future__ import annotations

import tempfile
from pathlib import Path

from orange.errors import InvalidInput, NotFound
from orange.projects import Project
from orange.runtime.git import git, git_ok
from orange.store.repo import open_repo
from orange.store.snapshots import add_snapshot, list_snapshots
from orange.store.task import Task


def unsaved_work(
    project: Project, worktree: Path, branch: str, *, commits: bool = True, base: str = ""
) -> str:
    """A description of what releasing the worktree would lose, or ``""`` (commits
    count when on no remote branch and not in the default branch, nor in ``base``)."""
    problems = []
    status = git("status", "--porcelain", cwd=worktree)
    if status:
        count = len(status.splitlines())
        problems.append(f"{count} uncommitted change{'s' if count != 1 else ''}")
    if commits and git_ok("rev-parse", "--verify", "--quiet", "HEAD", cwd=worktree):
        exclude = ["--remotes"]
        if git_ok(
            "rev-parse", "--verify", "--quiet", f"refs/heads/{project.default_branch}", cwd=worktree
        ):
            exclude.append(f"refs/heads/{project.default_branch}")
        if base and git_ok("rev-parse", "--verify", "--quiet", f"refs/heads/{base}", cwd=worktree):
            exclude.append(f"refs/heads/{base}")
        count = int(git("rev-list", "--count", "HEAD", "--not", *exclude, cwd=worktree))
        if count:
            problems.append(
                f"{count} commit{'s' if count != 1 else ''} on {branch} neither merged into "
                f"{base or project.default_branch} nor pushed"
            )
    return " and ".join(problems)


def save(project: Project, worktree: Path, task: Task) -> str:
    """Commit everything in the worktree (uncommitted and untracked files included) on
    top of HEAD, without touching its index, and record it as a snapshot ref."""
    head = git("rev-parse", "HEAD", cwd=worktree)
    with tempfile.TemporaryDirectory(prefix="orange-snap-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git("read-tree", "HEAD", cwd=worktree, env=env)
        git("add", "-A", cwd=worktree, env=env)
        tree = git("write-tree", cwd=worktree, env=env)
    commit = head
    if tree != git("rev-parse", "HEAD^{tree}", cwd=worktree):
        message = f"orange: snapshot of task {task.id} ({task.branch})\n\nuncommitted work saved"
        commit = git("commit-tree", tree, "-p", head, "-m", message, cwd=worktree)

    return add_snapshot(open_repo(project.path), task.id, commit, f"snapshot of task {task.id}")


def restore(project: Project, task: Task, number: int | None) -> tuple[str, str]:
    """Put a snapshot back on a branch; returns (branch, snapshot ref)."""

    taken = list_snapshots(open_repo(project.path), task.id)
    if not taken:
        raise NotFound(f"task {task.id} has no snapshots")
    number = max(taken) if number is None else number
    if number not in taken:
        raise NotFound(
            f"task {task.id} has no snapshot {number}",
            hint=f"snapshots: {', '.join(str(n) for n in sorted(taken))}",
        )
    commit = taken[number]
    branch = task.branch
    if git_ok("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=project.path):
        if git("rev-parse", f"refs/heads/{branch}", cwd=project.path) == commit:
            return branch, f"refs/orange/snapshots/{task.id}/{number}"
        branch = f"orange-restore/{task.id}-{number}"
        if git_ok("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=project.path):
            raise InvalidInput(f"branch {branch} already exists", hint="delete or rename it first")
    git("branch", branch, commit, cwd=project.path)
    return branch, f"refs/orange/snapshots/{task.id}/{number}"
