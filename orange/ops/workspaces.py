"""``orange workspace init|list|gc``: looking after a project's worktree pool.

A worktree is held when this host's record binds it to an active task
(`orange.runtime.workspace.holders`), never because a task in the ref names it; gc only
ever touches the pool's own folders (``<project>--<n>``) and the worktrees of this
host's runs that ended (`orange.runtime.workspace.run_worktrees`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from orange.errors import BrokenTaskFile
from orange.hooks.queue import start_next
from orange.projects import Project
from orange.runtime import places, ready, settingup, workcopy, workspace
from orange.runtime.adopt import ensure_adopted
from orange.runtime.git import git
from orange.runtime.snapshots import save, unsaved_work
from orange.store import listing, runfile
from orange.store.lock import attempt
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.engine import Engine
    from orange.runtime.tmux import Tmux


def _members(project: Project) -> list[tuple[str, Path]]:
    """Pool names up to the pool size, plus any leftover beyond it (after a shrink)."""
    names = {places.pool_name(project.name, n) for n in range(1, project.pool_size + 1)}
    root = places.workspaces_root()
    if root.is_dir():
        prefix = f"{project.name}--"
        names |= {
            p.name
            for p in root.iterdir()
            if p.name.startswith(prefix) and p.name.removeprefix(prefix).isdigit()
        }
    return sorted(
        ((n, places.workspace_path(n)) for n in names),
        key=lambda item: int(item[0].rsplit("--", 1)[1]),
    )


def init_pool(project: Project) -> list[Path]:
    created = []
    for n in range(1, project.pool_size + 1):
        path = places.workspace_path(places.pool_name(project.name, n))
        if not (path / ".git").exists():
            workspace.ensure_worktree(project, path)
            created.append(path)
    return created


def pool_status(project: Project, *, tmux: Callable[[], Tmux]) -> list[dict[str, Any]]:
    """The pool's worktrees, then the worktrees of this host's runs (``run``: its id).
    ``tmux``: the process's adapter, for adopting an older installation's tasks."""
    snap = TaskStore(project.repo()).snapshot()
    ensure_adopted(project, snap, tmux=tmux)
    held = workspace.holders(snap, project.name)
    branches = {t.id: t.branch for t in listing.tasks(snap) if isinstance(t, Task)}
    setting_up = {mark.workspace for mark in settingup.live(project.name)}
    pool = [
        {
            "name": name,
            "path": str(path),
            "exists": (path / ".git").exists(),
            "task": held.get(name),
            "branch": branches.get(held.get(name, "")),
            "port": ready.port_of(project, name),
            "setting_up": name in setting_up,
            "run": None,
        }
        for name, path in _members(project)
    ]
    runs = [
        {
            "name": f"run-{run_id}",
            "path": str(path),
            "exists": True,
            "task": None,
            "branch": git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=path, check=False)
            or None,
            "port": None,
            "setting_up": False,
            "run": run_id,
        }
        for run_id, path in workspace.run_worktrees(project)
    ]
    return pool + runs


class Collected(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    released: list[str]
    kept: list[str]
    started: list[str]  # what starting the next queued task said


def collect(engine: Engine, *, force: bool, tmux: Callable[[], Tmux]) -> Collected:
    """``orange workspace gc``: release the worktrees no active task holds, then start
    the next queued task if a worktree is free (a release outside a move frees a slot
    too: the queue never idles, DESIGN §10)."""
    assert engine.project is not None
    released, kept = gc_pool(engine.project, force=force, tmux=tmux)
    return Collected(released, kept, start_next(engine))


def gc_pool(
    project: Project, *, force: bool, tmux: Callable[[], Tmux]
) -> tuple[list[str], list[str]]:
    """Release worktrees no active task holds; keep (or with ``force`` snapshot) work."""
    snap = TaskStore(project.repo()).snapshot()
    ensure_adopted(project, snap, tmux=tmux)  # an older installation's running tasks keep theirs
    held = workspace.holders(snap, project.name)
    released: list[str] = []
    kept: list[str] = []
    for name, path in _members(project):
        if name in held or not (path / ".git").exists():
            continue
        branch = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=path, check=False)
        has_copy = workcopy.copy_path(path).is_file()
        if not branch and not has_copy and not git("status", "--porcelain", cwd=path):
            continue  # already clean and detached
        unsaved = unsaved_work(project, path, branch or "HEAD")
        if unsaved:
            owner = _owner(path)
            if not force or owner is None:
                kept.append(f"{name}: {unsaved}" + ("" if force else " (use --force to save it)"))
                continue
            ref = save(project, path, owner)
            released.append(f"{name} (work saved as {ref})")
        else:
            released.append(name)
        workspace.reset(project, path)
    for run_id, path in workspace.run_worktrees(project):
        said = _collect_run(project, snap, run_id, path)
        if said is not None:
            (released if said[0] else kept).append(said[1])
    return released, kept


def _collect_run(
    project: Project, snap: Snapshot, run_id: str, path: Path
) -> tuple[bool, str] | None:
    """Remove the worktree of a run that ended (completed or cancelled: it never runs
    again; its branch keeps every commit).  Returns whether it was removed and what to
    say, or None for a run that may still run (or whose record is gone or broken:
    nothing to go by)."""
    try:
        data = snap.read(runfile.run_path(run_id))
        record = None if data is None else runfile.load(data, run_id)
    except BrokenTaskFile:
        record = None
    if record is None or record.fields.get("status") not in runfile.ENDED:
        return None
    with attempt(path.parent / workspace.RUNNER_LOCK) as free:
        if not free:
            return None  # a runner still works in it
        changes = unsaved_work(project, path, "HEAD", commits=False)
        if changes:
            return False, f"run-{run_id}: {changes} (commit or discard them; the branch stays)"
        git("worktree", "remove", "--force", str(path), cwd=project.path)
    return True, f"run-{run_id}"


def _owner(path: Path) -> Task | None:
    """The task whose working copy is still in the worktree, if any."""
    copy = workcopy.copy_path(path)
    if not copy.is_file():
        return None
    try:
        return Task.parse(copy.read_text(), where=str(copy))
    except Exception:
        return None


def local_facts(project: Project, task: Task) -> dict[str, Any]:
    """What `task show` adds from this host: the bound slot's port, whether its worktree
    is being set up, and the log of its setup and teardown commands."""
    facts: dict[str, Any] = {}
    mark = settingup.read(project.name, task.id)
    name = task.str_field("workspace") or (mark.workspace if mark else "")
    if name and places.pool_path(project.name, name) is not None:
        port = ready.port_of(project, name)
        if port is not None:
            facts["port"] = port
    if mark is not None and not mark.ready:
        facts["setting_up"] = True
    log = ready.log_path(project.name, task.id)
    if log.is_file():
        facts["setup_log"] = str(log)
    return facts
