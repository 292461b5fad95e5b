"""Making a worktree ready to work in: copied local files, setup and teardown commands,
a port per pool slot (docs/worktrees.md).

The settings come from two places.  The project's local settings (``projects.json``,
set with ``orange project update``) are this host's own.  The repository's
``.orange/worktree.yml`` (same keys) arrives with a ``git pull``: its ports are data and
always apply, but its commands run and its copy globs apply only when a human trusted
the file's exact content on this host (`orange.engine.trust`), so a push never runs
code here nor picks which of this host's files go into a worktree.

Copying takes only files git ignores or does not track in the main checkout, never
writes over a file the worktree tracks, keeps symlinks as links, and never reads
outside the checkout (a glob with ``..`` or an absolute path is refused where it is
set, and a match whose real path leaves the checkout is skipped), nor writes outside the
worktree (a folder the branch made a link is not written through).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from orange.engine.caller import ROLE_VARIABLE
from orange.errors import InvalidInput, OrangeError
from orange.project_setup import check_glob
from orange.projects import Project
from orange.runtime.git import git, no_git_env
from orange.store.taskfile import parse_header

REPO_FILE = ".orange/worktree.yml"
SETUP_TIMEOUT = 600  # seconds per command
_KEYS = {"copy", "setup", "teardown", "ports"}


class SetupFailed(OrangeError):
    """A setup command exited non-zero or ran past its timeout.  ``shared`` says the same
    without the command or the log's path, for what is committed or pushed (a task's
    ``attention``): a shared record never names a local command or path."""

    shared = ""


class Settings(NamedTuple):  # not a dataclass: built on a move's path (engine.workflow)
    """What to do to a worktree: the project's local settings, merged with the
    repository file's (its commands only when trusted)."""

    copy: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    teardown: tuple[str, ...] = ()
    port_base: int | None = None
    port_stride: int = 10


class RepoFile(NamedTuple):  # not a dataclass: as Settings
    """``.orange/worktree.yml`` as read from a checkout."""

    text: str
    settings: Settings


def slot_port(project: Project, index: int, repo: Settings | None = None) -> int | None:
    """The port of pool slot ``index``: the local base wins over the repository's."""
    base, stride = project.port_base, project.port_stride
    if base is None and repo is not None:
        base, stride = repo.port_base, repo.port_stride
    return None if base is None else base + index * stride


def read_repo_file(checkout: Path) -> RepoFile | None:
    """The repository's settings file in ``checkout``; None when there is none.  A file
    that is not valid is an error naming the file and what is wrong."""
    path = checkout / REPO_FILE
    if path.is_symlink() or not path.is_file():
        return None
    where = REPO_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{where}: cannot read it ({exc})") from None
    try:
        data = parse_header(text, where) if text.strip() else {}
    except OrangeError as exc:  # over the size limits, anchors, duplicate keys, ...
        raise InvalidInput(exc.message) from None
    return RepoFile(text, _settings(data, where))


def _settings(data: Mapping[str, Any], where: str) -> Settings:
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise InvalidInput(f"{where}: unknown key {unknown[0]} (known: {', '.join(sorted(_KEYS))})")
    ports = data.get("ports") or {}
    if not isinstance(ports, Mapping) or set(ports) - {"base", "stride"}:
        raise InvalidInput(f"{where}: ports must be a mapping with base and stride")
    base, stride = ports.get("base"), ports.get("stride", 10)
    if base is not None and (type(base) is not int or not 0 < base < 65536):
        raise InvalidInput(f"{where}: ports.base must be a port number")
    if type(stride) is not int or stride < 1:
        raise InvalidInput(f"{where}: ports.stride must be a positive number")
    return Settings(
        copy=tuple(check_glob(glob) for glob in _list(data, "copy", where)),
        setup=_list(data, "setup", where),
        teardown=_list(data, "teardown", where),
        port_base=base,
        port_stride=stride,
    )


def _list(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidInput(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


# -- copying --------------------------------------------------------------------------
def copy_local_files(main: Path, worktree: Path, globs: Iterable[str]) -> list[str]:
    """Copy the untracked or ignored files of ``main`` matching ``globs`` into
    ``worktree`` (over an untracked one there, never a tracked one); returns the paths
    copied, relative to the checkout."""
    globs = [check_glob(glob) for glob in globs]
    if not globs:
        return []
    root, there = main.resolve(), worktree.resolve()
    tracked_here = _tracked(main)
    tracked_there = _tracked(worktree)
    copied: list[str] = []
    for relative in sorted(_matches(root, globs)):
        if relative in tracked_here or relative in tracked_there:
            continue
        source, target = root / relative, worktree / relative
        if not _inside(there, target):
            continue  # a folder on the way is a link the branch brought: never through it
        if target.is_dir() and not target.is_symlink():
            continue  # a folder where main has a file: not ours to remove
        # An ignored file an earlier task left (the reset keeps them): the main
        # checkout's as it is now replaces it; a link is replaced, never written through.
        target.unlink(missing_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
        copied.append(relative)
    return copied


def _matches(root: Path, globs: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for glob in globs:
        for match in root.glob(glob):
            for path in _files(match):
                relative = path.relative_to(root)
                if relative.parts[0] == ".git" or not _inside(root, path):
                    continue
                found.add(relative.as_posix())
    return found


def _files(match: Path) -> Iterable[Path]:
    if match.is_symlink() or match.is_file():
        return [match]
    if match.is_dir():
        return [p for p in match.rglob("*") if p.is_symlink() or p.is_file()]
    return []


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path``'s folder really is inside ``root`` (a symlinked folder on the
    way may lead elsewhere); the file itself may be a symlink, copied as a link."""
    try:
        path.parent.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _tracked(checkout: Path) -> set[str]:
    return set(git("ls-files", "-z", cwd=checkout).split("\0")) - {""}


# -- commands -------------------------------------------------------------------------
def run_commands(
    commands: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    *,
    what: str = "setup",
    timeout: float = SETUP_TIMEOUT,
) -> None:
    """Run ``commands`` in order through ``sh -c``, appending their output to ``log``;
    raises SetupFailed at the first one that fails or runs past ``timeout``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    for number, command in enumerate(commands, 1):
        which = f"{what} command {number} of {len(commands)}"
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"$ {command}\n")
            out.flush()
            process = subprocess.Popen(
                ["sh", "-c", command],
                cwd=cwd,
                env=_command_env(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a timeout stops the command's children too
            )
            try:
                status = process.wait(timeout=timeout)
            except BaseException as exc:  # a timeout, or the user's Ctrl-C: stop it all
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                if not isinstance(exc, subprocess.TimeoutExpired):
                    raise
                failed = SetupFailed(
                    f"{what} command {command!r} ran past {timeout:g} s and was stopped",
                    hint=f"see {log}",
                )
                failed.shared = f"{which} ran past {timeout:g} s and was stopped"
                raise failed from None
        if status != 0:
            failed = SetupFailed(
                f"{what} command {command!r} exited with status {status}", hint=f"see {log}"
            )
            failed.shared = f"{which} exited with status {status}"
            raise failed


def _command_env(extra: Mapping[str, str]) -> dict[str, str]:
    """Orange's environment for a setup command, without what would make it act as
    someone else: git's hook variables (a move made from a git hook) and an agent's
    role (a move an agent made that started the next task's setup)."""
    env = no_git_env(extra)
    env.pop(ROLE_VARIABLE, None)
    return env
