"""Pre-commit in a tasks checkout: the bookkeeping of a move made by hand.

A person moves a task in a tasks checkout by editing its ``status`` (DESIGN §6).
Every move Orange writes also sets ``crash_count`` to 0, and so must a move by hand
(`orange.engine.steps`, the bare move): after an agent death the person would have to
reset the count too, or see a legal move refused.  Pre-commit writes it for them: in
the index git is committing, and in the checkout's file when that file is what was
staged.  The rewrite is kept only when the whole commit is then legal; otherwise the
index is put back and the commit is refused as the person staged it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2

from orange.errors import OrangeError
from orange.runtime.git import git
from orange.store.repo import GitRepo
from orange.store.task import Task
from orange.store.treediff import changed_files

COUNT = "crash_count"


@dataclass(frozen=True)
class Rewrite:
    path: str
    staged: bytes
    written: bytes
    note: str


def count_rewrites(
    pygit: pygit2.Repository, parent: pygit2.Tree | None, staged: pygit2.Tree
) -> list[Rewrite]:
    """The staged task files that move a task and keep a count a move sets to 0."""
    found: list[Rewrite] = []
    for path, old, new in changed_files(pygit, parent, staged):
        if not path.startswith("tasks/") or old is None or new is None:
            continue
        try:
            before = Task.parse(old.decode("utf-8"), where="before")
            after = Task.parse(new.decode("utf-8"), where="after")
        except (UnicodeDecodeError, OrangeError):
            continue  # the check names what is wrong with it
        count = after.fields.get(COUNT)
        if after.status == before.status or count in (0, None):
            continue
        written = after.with_fields(**{COUNT: 0}).render().encode()
        note = f"task {after.id}: {COUNT} {count} -> 0, as Orange writes it on a move"
        found.append(Rewrite(path, new, written, note))
    return found


def stage(repo: GitRepo, rewrites: list[Rewrite], env: Mapping[str, str], *, undo: bool) -> None:
    """Put each rewrite (or, with ``undo``, what was staged) into the index git
    commits, and into the checkout's file when it still holds what was staged."""
    assert repo.workdir is not None
    for rewrite in rewrites:
        old, new = (rewrite.written, rewrite.staged) if undo else (rewrite.staged, rewrite.written)
        blob = repo.pygit.create_blob(new)
        info = f"100644,{blob},{rewrite.path}"
        git("update-index", "--cacheinfo", info, cwd=repo.workdir, env=dict(env))
        file = Path(repo.workdir) / rewrite.path
        if file.is_file() and file.read_bytes() == old:
            file.write_bytes(new)
