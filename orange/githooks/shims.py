"""Installing Orange's git hook shims (STYLE §9) into a repository's hooks directory.

The shims live in ``git-hooks/`` (package data ``orange._git_hooks``): a few lines of
sh carrying the marker ``orange-hook-shim`` that exec ``orange hook-impl NAME``.  The
installed copy has the absolute path of this ``orange`` baked in, so a hook run with a
minimal PATH still finds it (falling back to ``orange`` on PATH).

A hook that was there before Orange's is kept: it moves to ``NAME.orange-chained`` and
the shim runs it first, with the same arguments and stdin; its failure fails the git
command as it would have.  Reinstalling is idempotent; uninstalling puts it back.

The hooks directory is ``core.hooksPath`` when set (a relative path is relative to the
main checkout's top, or to the git dir of a bare repository), else the common git
dir's ``hooks`` (shared by every worktree of the project).
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from importlib import resources
from pathlib import Path

from orange.errors import InvalidInput
from orange.runtime.git import git
from orange.store.repo import GitRepo, open_repo

MARKER = "orange-hook-shim"
CHAINED_SUFFIX = ".orange-chained"
PROJECT_HOOKS = (
    "pre-commit",
    "post-commit",
    "pre-merge-commit",
    "post-merge",
    "reference-transaction",
)
SERVER_HOOKS = ("update",)
_BIN_LINE = "ORANGE_BIN=orange\n"
SERVER_TRUST_KEY = "orange.trustedWorkflows"  # read by `orange.githooks.server`


def install_hooks(repo_path: str | os.PathLike[str]) -> list[str]:
    """Install the project hooks into the repository at ``repo_path``; the paths written."""
    return _install(open_repo(repo_path), PROJECT_HOOKS)


def install_server_hook(
    bare_path: str | os.PathLike[str], trusted_workflows: Path | None = None
) -> list[str]:
    """Install the ``update`` hook into a (bare) shared repository on this machine;
    ``trusted_workflows``: a directory whose ``*.yml`` definitions the hook trusts
    besides the shipped ones (kept in the repository's config, see
    `orange.githooks.server`)."""
    repo = open_repo(bare_path)
    if trusted_workflows is not None:
        directory = trusted_workflows.expanduser().resolve()
        if not directory.is_dir():
            raise InvalidInput(
                f"--trusted-workflows {trusted_workflows}: not a directory",
                hint="give the directory holding the server's trusted *.yml workflows",
            )
    written = _install(repo, SERVER_HOOKS)
    if trusted_workflows is not None:
        git("config", SERVER_TRUST_KEY, str(directory), cwd=repo.common_dir)
    return written


def uninstall_hooks(repo_path: str | os.PathLike[str]) -> list[str]:
    """Remove Orange's shims and put back the hooks they chained; the paths removed."""
    directory = hooks_dir(open_repo(repo_path))
    removed = []
    for name in (*PROJECT_HOOKS, *SERVER_HOOKS):
        target = directory / name
        if not is_orange_shim(target):
            continue
        target.unlink()
        removed.append(str(target))
        chained = directory / f"{name}{CHAINED_SUFFIX}"
        if chained.exists() or chained.is_symlink():
            os.replace(chained, target)
    return removed


def hooks_dir(repo: GitRepo) -> Path:
    top = repo.common_dir if repo.is_bare else (repo.main_workdir or repo.workdir)
    assert top is not None
    configured = git("config", "--get", "core.hooksPath", cwd=top, check=False)
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else (top / path).resolve()
    return repo.common_dir / "hooks"


def is_orange_shim(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(200)
    except OSError:
        return False
    return MARKER.encode() in head


def shim_text(name: str) -> str:
    """The shim for hook ``name`` with this Orange's executable baked in."""
    text = resources.files("orange._git_hooks").joinpath(name).read_text()
    if _BIN_LINE not in text:  # pragma: no cover - the shipped shims all have it
        raise InvalidInput(f"git-hooks/{name} is not an Orange shim")
    return text.replace(_BIN_LINE, f"ORANGE_BIN={shlex.quote(orange_executable())}\n", 1)


def orange_executable() -> str:
    """The ``orange`` next to this Python (a venv's bin), else ``orange`` on PATH."""
    candidate = Path(sys.executable).parent / "orange"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return "orange"


def _install(repo: GitRepo, names: tuple[str, ...]) -> list[str]:
    directory = hooks_dir(repo)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        target = directory / name
        chained = directory / f"{name}{CHAINED_SUFFIX}"
        if (target.exists() or target.is_symlink()) and not is_orange_shim(target):
            if chained.exists() or chained.is_symlink():
                raise InvalidInput(
                    f"{target} is not Orange's and {chained.name} already exists",
                    hint=f"merge them into {chained} by hand, remove {target}, and reinstall",
                )
            os.replace(target, chained)
        _write_executable(target, shim_text(name))
        written.append(str(target))
    return written


def _write_executable(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.orange-tmp")
    tmp.write_text(text)
    mode = tmp.stat().st_mode
    tmp.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.replace(tmp, path)
