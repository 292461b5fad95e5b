"""Undoing this host's own bindings of a task without running any workflow hook.

For a human's cancel of a task whose committed definition this host does not trust
(DESIGN §8): none of that definition's hooks may run, yet the session and worktree this
host's Orange made for the task must not be left behind.  `release_local` acts on the
local records only (`orange.runtime.bindings`), never on the ref's runtime fields;
`release_recorded_bindings` is how the composition root hands it to the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from orange.errors import HookFailed, OrangeError
from orange.projects import Project
from orange.runtime import bindings, ready, snapshots, workspace
from orange.runtime.git import git
from orange.runtime.places import pool_path
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.services import Services
    from orange.runtime.tmux import Tmux


def release_recorded_bindings(
    engine: Services, task: Task, *, force: bool, tmux: Callable[[], Tmux]
) -> list[str]:
    """The engine's `LocalRelease`: `release_local` after a cancel already committed,
    so a refusal (unsaved work without ``--force``) is said and the worktree stays
    bound."""
    if engine.project is None:
        return []
    try:
        return release_local(engine.project, task, force=force, tmux=tmux)
    except OrangeError as exc:
        return [f"warning: kept this host's worktree of task {task.id}: {exc}"]


def release_local(
    project: Project, task: Task, *, force: bool = False, tmux: Callable[[], Tmux]
) -> list[str]:
    """Kill the tmux session and release the worktree this host recorded for ``task``,
    then drop its record.  Never loses work: unsaved work in the worktree refuses
    (nothing done) unless ``force``, which snapshots it first.  A session or worktree
    that another task's record also names (a record left by a move never committed) is
    left alone.  Returns what was done, for the caller to say.  ``tmux`` gives the
    process's tmux adapter (`orange.compose.tmux`), asked for only for a session."""
    rec = bindings.read(project.name, task.id)
    if rec is None:
        return []
    others = [r for r in bindings.all_records(project.name) if r.task != task.id]
    path = pool_path(project.name, rec.workspace) if rec.workspace else None
    if path is not None and (not path.is_dir() or rec.workspace in {r.workspace for r in others}):
        path = None
    said: list[str] = []
    saved = _check_work(project, task, path, force=force)
    if saved:
        said.append(f"saved the work of task {task.id} as {saved}")
    if rec.session and rec.session not in {r.session for r in others}:
        server = tmux()
        if server.has_session(rec.session):
            server.kill_session(rec.session)
            said.append(f"killed tmux session {rec.session}")
    if path is not None:
        failed = ready.tear_down(project, task.id, path)  # the host's own settings' teardown
        if failed:
            said.append(f"warning: {failed}")
        workspace.reset(project, path)
        said.append(f"released workspace {path.name}")
    bindings.record(project.name, task.id, workspace="", session="", run="")
    return said


def _check_work(project: Project, task: Task, path: Path | None, *, force: bool) -> str:
    """Refuse over unsaved work in ``path`` unless ``force``; then the snapshot ref."""
    if path is None:
        return ""
    branch = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=path, check=False)
    unsaved = snapshots.unsaved_work(project, path, branch or "HEAD")
    if not unsaved:
        return ""
    if not force:
        raise HookFailed(
            f"task {task.id} has unsaved work in {path}: {unsaved}",
            hint="commit and merge or push it, or pass --force to save it under "
            f"refs/orange/snapshots/{task.id}/ first",
        )
    return snapshots.save(project, path, task)
