"""The agent's TASK.md working copy in its worktree, kept in step with the ref.

Two writers change a body: the agent (this copy) and everyone else (the ref).  After
every write on either side the two are merged three-way against the body last synced
to the worktree (kept in the worktree's private git dir), so neither side's words are
dropped (DESIGN §3).  A real conflict keeps both versions between markers and is
reported, so the engine can set ``attention``.

The copy is ``TASK.md`` unless the project tracks a TASK.md of its own, which Orange
never overwrites: then the copy is ``ORANGE-TASK.md`` and the agent is told so.
"""

from __future__ import annotations

from pathlib import Path

from orange.errors import BrokenTaskFile
from orange.runtime.bindings import workspace_of
from orange.runtime.git import git, merge_file, tracks
from orange.store import taskfile
from orange.store.task import Task

COPY = "TASK.md"
ALT_COPY = "ORANGE-TASK.md"
_BASE = "orange-task-base.md"


def copy_name(worktree: Path) -> str:
    return ALT_COPY if tracks(worktree, COPY) else COPY


def copy_path(worktree: Path) -> Path:
    alt = worktree / ALT_COPY
    return alt if alt.exists() else worktree / copy_name(worktree)


def _base_path(worktree: Path) -> Path:
    git_dir = Path(git("rev-parse", "--absolute-git-dir", cwd=worktree))
    return git_dir / _BASE


def write_fresh(task: Task, worktree: Path) -> Path:
    """Write the working copy from the ref (a new binding)."""
    path = worktree / copy_name(worktree)
    path.write_text(task.render())
    _base_path(worktree).write_text(task.body)
    return path


def remove(worktree: Path) -> None:
    for name in (COPY, ALT_COPY):
        path = worktree / name
        if path.exists() and not tracks(worktree, name):
            path.unlink()
    _base_path(worktree).unlink(missing_ok=True)


def body_of_copy(text: str) -> str:
    """The body of a working copy; a mangled frontmatter is ignored, never fatal."""
    try:
        return taskfile.split(text)[1]
    except BrokenTaskFile:
        lines = text.splitlines(keepends=True)
        fences = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == "---"]
        if len(fences) >= 2 and fences[0] == 0:
            return "".join(lines[fences[1] + 1 :])
        return text


_LABELS = ("orange (ref)", "last sync", "agent (TASK.md)")
_MARKER = f"<<<<<<< {_LABELS[0]}"


def merge(ref_body: str, base: str, copy_body: str) -> tuple[str, bool]:
    """(the body to commit, whether it holds a conflict): a conflict of this merge, or
    one an earlier write left in the copy (`RuntimeCopies.after_write` keeps both
    versions there) that the ref does not hold yet."""
    if copy_body in (base, ref_body):
        return ref_body, False
    if ref_body == base:
        return copy_body, _MARKER in copy_body and _MARKER not in ref_body
    return merge_file(ref_body, base, copy_body, _LABELS)


class RuntimeCopies:
    """`orange.engine.engine.WorkingCopies` for worktrees on this machine."""

    def take_in(self, task: Task) -> tuple[str, bool] | None:
        worktree = workspace_of(task)  # only a worktree this host bound (DESIGN §8)
        if worktree is None or not worktree.is_dir():
            return None
        path = copy_path(worktree)
        if not path.is_file():
            return None
        base_file = _base_path(worktree)
        base = base_file.read_text() if base_file.is_file() else task.body
        return merge(task.body, base, body_of_copy(path.read_text()))

    def after_write(self, task: Task) -> None:
        worktree = workspace_of(task)
        if worktree is None or not worktree.is_dir():
            return
        path = copy_path(worktree)
        base_file = _base_path(worktree)
        body = task.body
        if path.is_file() and base_file.is_file():
            body, _conflict = merge(
                task.body, base_file.read_text(), body_of_copy(path.read_text())
            )
        path.write_text(taskfile.join(task.fields, body))
        base_file.write_text(task.body)
