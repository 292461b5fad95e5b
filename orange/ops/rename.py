"""Renaming a task's branch while its worktree and tmux session are live.

A rename changes the task's binding in several steps: git's branch, the commit naming
the new branch and session, this host's record of the session, tmux's session name.
The monitor must never judge the agent between them (it would find the recorded
session gone and count a crash, issue 29), so they run under this host's lock on the
task (`Engine.busy`), which the monitor's death handling tries first and, finding it
held, looks again a tick later.
"""

from __future__ import annotations

from pathlib import Path

from orange import projects
from orange.engine.caller import HUMAN, Caller
from orange.engine.edits import update_fields
from orange.engine.engine import busy_lock
from orange.engine.ports import WorkingCopies
from orange.engine.tasks import check_own_branch
from orange.errors import InvalidInput
from orange.runtime import bindings
from orange.runtime.git import git, git_ok
from orange.runtime.tmux import Tmux
from orange.store.branches import check_branch_name
from orange.store.listing import check_branch_unique
from orange.store.lock import exclusive
from orange.store.store import TaskStore
from orange.store.task import Task


def rename_branch(
    store: TaskStore,
    copies: WorkingCopies | None,
    task: Task,
    new: str | None,
    *,
    tmux: Tmux,
    caller: Caller = HUMAN,
) -> Task:
    """Rename (``new``) or adopt (None: the branch checked out in the worktree), for
    ``caller`` (checked before git is touched); a session this host started is renamed
    through ``tmux``."""
    caller.check_own(task.id, "edit")
    with exclusive(busy_lock(store, task.id)):
        return _rename(store, copies, store.get(task.id), new, tmux=tmux, caller=caller)


def _rename(
    store: TaskStore,
    copies: WorkingCopies | None,
    task: Task,
    new: str | None,
    *,
    tmux: Tmux,
    caller: Caller,
) -> Task:
    worktree = bindings.workspace_of(task)
    live = worktree is not None and worktree.is_dir()
    new = new if new is not None else _checked_out(worktree if live else None)
    check_branch_name(new)
    if new == task.branch:
        return task
    check_own_branch(new, task.str_field("base"), projects.get(task.project).default_branch)
    renamed_git = False
    if live and worktree is not None:
        current = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=worktree, check=False)
        if current == task.branch:
            if git_ok("rev-parse", "--verify", "--quiet", f"refs/heads/{new}", cwd=worktree):
                raise InvalidInput(f"branch {new} already exists", hint="choose another name")
            git("branch", "-m", task.branch, new, cwd=worktree)
            renamed_git = True
    changes: dict[str, object] = {"branch": new}
    old_session = task.str_field("tmux_session")
    bound = bindings.session_of(task)  # only a session this host started is renamed
    new_session = Tmux.session_name(task.project, new) if old_session else None
    if old_session and new_session:
        changes["tmux_session"] = new_session
    try:
        updated = update_fields(
            store,
            task.id,
            changes,
            copies=copies,
            caller=caller,
            check=lambda snap, current: check_branch_unique(snap, current.project, new, current.id),
        )
    except Exception:
        if renamed_git and worktree is not None:
            git("branch", "-m", new, task.branch, cwd=worktree, check=False)
        raise
    if bound and new_session and bound != new_session:
        bindings.record(task.project, task.id, session=new_session)
        if tmux.has_session(bound):
            tmux.rename_session(bound, new_session)
    return updated  # the caller brings the working copy up to date, once


def _checked_out(worktree: Path | None) -> str:
    """The branch the task's worktree has checked out (adopting it)."""
    if worktree is None:
        raise InvalidInput(
            "this task has no worktree to adopt a branch from",
            hint="pass the branch name: --branch NAME",
        )
    branch = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=worktree, check=False)
    if not branch:
        raise InvalidInput(f"the worktree {worktree} is not on a branch")
    return branch
