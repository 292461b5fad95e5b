"""The git side of sharing tasks: fetch and push of the tasks ref, the fetch refspec.

Every call goes through `orange.runtime.git.git` (the one choke point for git).  The
fetch refspec (``refs/orange/tasks:refs/orange/remotes/<remote>/tasks``, never forced)
lets a plain ``git fetch`` carry the ref too; ``remote.<name>.push`` is never set, so a
plain ``git push`` keeps pushing what it pushed before.

A sync's fetch and push are one git process each, and run none of this repository's
hooks (``core.hooksPath`` pointed at nothing, for that command only; the remote's own
hooks still run, its side reads its own configuration): the ``reference-transaction``
hook would start Orange again in the background only to say that the ref Orange just
moved has moved (the sync wakes the monitor itself), and a ``pre-push`` hook is for
code, as ``git push --no-verify`` assumes.  Refs and configuration are read in-process.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from orange.errors import InvalidInput, OrangeError
from orange.runtime.git import GitFailed, git
from orange.store import layout
from orange.store.integrate import remote_ref

if TYPE_CHECKING:
    from orange.projects import Project

REJECTED = ("[rejected]", "non-fast-forward", "fetch first")
BOUND = 10.0  # seconds a claim, a branch push or fetch may take
RACED = ("cannot lock ref", "failed to update ref")  # another push won at the server
# For the sync's own fetch and push: no hook of this repository (none is found under a
# file), and one thread for the delta search and index of the pack (the tasks ref's
# objects are small: threads wait on each other more than they work; the pack of 1,000
# commits took 1.35 s against 1.46 s, interleaved runs on 2 cores).  Neither setting
# reaches the remote's side.
OPTIONS = ("-c", "core.hooksPath=/dev/null", "-c", "pack.threads=1")


class Unreachable(OrangeError):
    """The remote could not be reached (or refused the fetch)."""


def refspec(remote: str) -> str:
    """The exact refspec Orange's own fetch of the tasks asks for."""
    return f"{layout.TASKS_REF}:{remote_ref(remote)}"


def config_refspec(remote: str) -> str:
    """The refspec kept in ``remote.<name>.fetch`` so plain `git fetch` carries the
    tasks: a pattern (matching ``refs/orange/tasks``), because an exact refspec makes
    every `git fetch` of a remote that has no tasks yet fail ("couldn't find remote
    ref"), the user's own fetches included.  Never forced (no ``+``)."""
    return f"{layout.TASKS_REF[:-1]}*:{remote_ref(remote)[:-1]}*"


def _ours(line: str, remote: str) -> bool:
    return line in (refspec(remote), config_refspec(remote))


def remotes(cwd: Path) -> list[str]:
    return git("remote", cwd=cwd).split()


def default_remote(cwd: Path, branch: str, repo: pygit2.Repository | None = None) -> str:
    """``branch.<default>.remote``, else ``origin`` (read from ``repo``'s configuration
    when given, without a process)."""
    key = f"branch.{branch}.remote"
    if repo is not None:
        values = list(repo.config.get_multivar(key))  # (no `get`: a Config is no dict)
        return ((values[-1] if values else "") or "").strip() or "origin"
    configured = git("config", "--get", key, cwd=cwd, check=False)
    return configured.strip() or "origin"


def require_remote(cwd: Path, remote: str, repo: pygit2.Repository | None = None) -> None:
    """An error unless the repository has ``remote`` (read from ``repo``'s
    configuration when given, without a process)."""
    names = remotes(cwd) if repo is None else list(repo.remotes.names())
    if remote not in names:
        raise InvalidInput(
            f"no git remote {remote!r} in this repository",
            hint="add one with `git remote add NAME URL`, or name one: `orange sync NAME`",
        )


def fetch(repo: pygit2.Repository, remote: str, timeout: float | None = None) -> str | None:
    """Fetch the remote's tasks ref into ``refs/orange/remotes/<remote>/tasks``; its tip
    (None: the remote has no tasks yet)."""
    cwd = _cwd(repo)
    args = ("fetch", "--quiet", "--no-tags", remote, refspec(remote))
    try:
        git(*OPTIONS, *args, cwd=cwd, timeout=timeout)
    except GitFailed as exc:
        # Asked only now: a remote without the ref fails the fetch (in words that may
        # be translated), and the usual fetch needs no second connection.
        try:
            listed = git("ls-remote", remote, layout.TASKS_REF, cwd=cwd, timeout=timeout)
        except GitFailed as failed:
            why = _last_line(failed.stderr)
            raise Unreachable(f"cannot reach remote {remote!r}: {why}") from None
        if not listed.strip():
            return None
        raise Unreachable(f"cannot fetch from {remote!r}: {_last_line(exc.stderr)}") from None
    ref = repo.references.get(remote_ref(remote))
    return None if ref is None else str(ref.target)


def push(repo: pygit2.Repository, remote: str, timeout: float | None = None) -> bool:
    """Push the tasks ref, never forced: True when pushed, False when it lost a race
    (the remote moved: fetch, merge, push again).  Raises for anything else (the
    server's hook refused it, the remote went away)."""
    # The tip as it is now, pushed by id: the remote-tracking ref is then set to exactly
    # what the remote holds (git sets it only where a fetch refspec names it).
    tip = repo.references[layout.TASKS_REF].target
    spec = f"{tip}:{layout.TASKS_REF}"
    try:
        git(*OPTIONS, "push", "--quiet", remote, spec, cwd=_cwd(repo), timeout=timeout)
    except GitFailed as exc:
        text = exc.stderr + str(exc)
        if any(mark in text for mark in REJECTED) and "remote rejected" not in text:
            return False
        if any(mark in text for mark in RACED):
            return False
        reasons = [ln.strip() for ln in exc.stderr.splitlines() if ln.startswith("remote: ")]
        shown = "; ".join(r.removeprefix("remote: ") for r in reasons[:3]) or _last_line(exc.stderr)
        if exc.code == 124 or ("remote rejected" not in text and not reasons):
            raise Unreachable(f"cannot push to {remote!r}: {shown}") from None
        raise OrangeError(f"push to {remote!r} refused: {shown}") from None
    repo.references.create(remote_ref(remote), tip, force=True)
    return True


def _cwd(repo: pygit2.Repository) -> Path:
    return Path(repo.workdir or repo.path)


def project_remote(project: Project) -> str | None:
    """The project's sync remote if the repository has it (None: no such remote)."""
    path = Path(project.path)
    name = default_remote(path, project.default_branch)
    return name if name in remotes(path) else None


def claim_remote(project: Project) -> str | None:
    """The remote a start claims its task on: the project's sync remote, when its
    fetch refspec marks it as one (``orange project add``, ``orange sync --setup``)."""
    name = project_remote(project)
    if name is None:
        return None
    path = Path(project.path)
    existing = git("config", "--get-all", f"remote.{name}.fetch", cwd=path, check=False)
    return name if any(_ours(line, name) for line in existing.splitlines()) else None


def add_refspec(cwd: Path, remote: str) -> bool:
    """Add the fetch refspec to ``remote`` unless it is there; True when added."""
    existing = git("config", "--get-all", f"remote.{remote}.fetch", cwd=cwd, check=False)
    if config_refspec(remote) in existing.splitlines():
        return False
    remove_refspec(cwd, remote)  # an earlier Orange's exact refspec
    git("config", "--add", f"remote.{remote}.fetch", config_refspec(remote), cwd=cwd)
    return True


def remove_refspec(cwd: Path, remote: str) -> None:
    for spec in (refspec(remote), config_refspec(remote)):
        pattern = "^" + re.escape(spec) + "$"
        git("config", "--unset-all", f"remote.{remote}.fetch", pattern, cwd=cwd, check=False)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"
