"""Where a task's agent is on this host: its worktree in the pool, its tmux window.

Nothing here runs git; the commands agents run most (a summary update) need these and
nothing of the pool's machinery (`orange.hooks.workspace`).
"""

from __future__ import annotations

from pathlib import Path

from orange.home import host_name, orange_home
from orange.store.task import Task

WORKER = "worker"


def workspaces_root() -> Path:
    return orange_home() / "workspaces"


def workspace_path(name: str) -> Path:
    return workspaces_root() / name


def pool_name(project: str, n: int) -> str:
    return f"{project}--{n}"


def local_workspace(task: Task) -> Path | None:
    """The task's worktree on this machine, if it has one here."""
    name = task.str_field("workspace")
    if not name or task.str_field("host") not in ("", host_name()):
        return None
    return workspace_path(name)


def reviewer_window(task: Task) -> str:
    return f"review-{task.int_field('review_round')}"


def agent_window(task: Task, agent: str) -> str:
    """The tmux window of a state's agent (DESIGN §5): the reviewer's or the worker."""
    return reviewer_window(task) if agent == "reviewer" else WORKER
