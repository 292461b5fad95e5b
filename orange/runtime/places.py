"""Where a task's agent is on this host: its worktree in the pool, its tmux window.

Nothing here runs git; the commands agents run most (a summary update) need these and
nothing of the pool's machinery (`orange.runtime.workspace`).
"""

from __future__ import annotations

from pathlib import Path

from orange.home import orange_home
from orange.store.task import Task

WORKER = "worker"


def workspaces_root() -> Path:
    return orange_home() / "workspaces"


def workspace_path(name: str) -> Path:
    return workspaces_root() / name


def pool_name(project: str, n: int) -> str:
    return f"{project}--{n}"


def pool_path(project: str, name: str) -> Path | None:
    """The path of pool worktree ``name`` of ``project``, or None when ``name`` is not
    one: anything but ``<project>--<n>`` (so no ``..``, no ``/``), or a path that
    resolves outside the pool (a symlink).  A ``workspace`` field that fails this is
    never acted on (DESIGN §8)."""
    prefix = f"{project}--"
    number = name.removeprefix(prefix)
    if not project or not name.startswith(prefix) or not (number.isascii() and number.isdigit()):
        return None
    path = workspace_path(name)
    root = workspaces_root().resolve()
    if path.resolve().parent != root:
        return None
    return path


def reviewer_window(task: Task) -> str:
    return f"review-{task.int_field('review_round')}"


def agent_window(task: Task, agent: str) -> str:
    """The tmux window of a state's agent (DESIGN §5): the reviewer's or the worker."""
    return reviewer_window(task) if agent == "reviewer" else WORKER
