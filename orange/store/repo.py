"""Opening the project repository from wherever a command runs.

Works alike from the main checkout, a linked worktree, a subdirectory of either, or a
bare repository (the server side of the git hooks).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from orange.errors import NotARepository

if TYPE_CHECKING:
    import pygit2


class GitRepo:
    """A repository handle plus the paths Orange needs from it.

    A plain class (not a dataclass, see `orange.store.task.Task`); treat it as frozen.
    """

    __slots__ = ("_pygit", "common_dir", "git_dir", "workdir")

    def __init__(
        self,
        git_dir: Path,  # this worktree's git dir (``.git`` or ``.git/worktrees/<name>``)
        common_dir: Path,  # shared by all worktrees: refs, objects, hooks, our lock and cache
        workdir: Path | None,  # this worktree's top level; None for a bare repository
        pygit: pygit2.Repository | None = None,  # opened already, else on first use
    ) -> None:
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.workdir = workdir
        self._pygit = pygit

    def __repr__(self) -> str:
        return f"GitRepo(git_dir={self.git_dir!r}, common_dir={self.common_dir!r})"

    @property
    def pygit(self) -> pygit2.Repository:
        if self._pygit is None:
            self._pygit = pygit2.Repository(str(self.git_dir))
        return self._pygit

    @property
    def main_workdir(self) -> Path | None:
        """The main checkout (where a project is registered), None for a bare repo."""
        if self.common_dir.name == ".git":
            return self.common_dir.parent
        return None if self.is_bare else self.workdir

    @property
    def is_bare(self) -> bool:
        return self.workdir is None

    def orange_dir(self) -> Path:
        """Orange's private files inside the common git dir (lock, cache)."""
        path = self.common_dir / "orange"
        path.mkdir(exist_ok=True)
        return path


def open_repo(path: str | os.PathLike[str] = ".") -> GitRepo:
    """The repository containing ``path``.  Raises NotARepository."""

    start = Path(path).resolve()
    try:
        found = pygit2.discover_repository(str(start))
    except pygit2.GitError:
        found = None
    if not found:
        raise NotARepository(
            f"{start} is not inside a git repository",
            hint="run this inside a project's checkout, or pass --project",
        )
    git_dir = Path(found).resolve()
    repo = pygit2.Repository(str(git_dir))
    workdir = Path(repo.workdir).resolve() if repo.workdir else None
    common = git_dir
    commondir_file = git_dir / "commondir"
    if commondir_file.is_file():
        common = (git_dir / commondir_file.read_text().strip()).resolve()
    return GitRepo(git_dir=git_dir, common_dir=common, workdir=workdir, pygit=repo)
