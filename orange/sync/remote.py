"""The git side of sharing tasks: fetch and push of the tasks ref, the fetch refspec.

Every call goes through `orange.hooks.git.git` (the one choke point for git).  The
fetch refspec (``refs/orange/tasks:refs/orange/remotes/<remote>/tasks``, never forced)
lets a plain ``git fetch`` carry the ref too; ``remote.<name>.push`` is never set, so a
plain ``git push`` keeps pushing what it pushed before.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orange.errors import InvalidInput, OrangeError
from orange.hooks.git import GitFailed, git
from orange.store import layout
from orange.store.integrate import remote_ref

if TYPE_CHECKING:
    from orange.projects import Project

REJECTED = ("[rejected]", "non-fast-forward", "fetch first")
BOUND = 10.0  # seconds a claim, a branch push or fetch may take
RACED = ("cannot lock ref", "failed to update ref")  # another push won at the server


class Unreachable(OrangeError):
    """The remote could not be reached (or refused the fetch)."""


def refspec(remote: str) -> str:
    return f"{layout.TASKS_REF}:{remote_ref(remote)}"


def remotes(cwd: Path) -> list[str]:
    return git("remote", cwd=cwd).split()


def default_remote(cwd: Path, branch: str) -> str:
    """``branch.<default>.remote``, else ``origin``."""
    configured = git("config", "--get", f"branch.{branch}.remote", cwd=cwd, check=False)
    return configured.strip() or "origin"


def require_remote(cwd: Path, remote: str) -> None:
    if remote not in remotes(cwd):
        raise InvalidInput(
            f"no git remote {remote!r} in this repository",
            hint="add one with `git remote add NAME URL`, or name one: `orange sync NAME`",
        )


def fetch(cwd: Path, remote: str, timeout: float | None = None) -> str | None:
    """Fetch the remote's tasks ref into ``refs/orange/remotes/<remote>/tasks``; its tip
    (None: the remote has no tasks yet)."""
    try:
        listed = git("ls-remote", remote, layout.TASKS_REF, cwd=cwd, timeout=timeout)
    except GitFailed as exc:
        raise Unreachable(f"cannot reach remote {remote!r}: {_last_line(exc.stderr)}") from None
    if not listed.strip():
        return None
    try:
        git("fetch", "--quiet", "--no-tags", remote, refspec(remote), cwd=cwd, timeout=timeout)
    except GitFailed as exc:
        raise Unreachable(f"cannot fetch from {remote!r}: {_last_line(exc.stderr)}") from None
    return git("rev-parse", "--verify", remote_ref(remote), cwd=cwd)


def push(cwd: Path, remote: str, timeout: float | None = None) -> bool:
    """Push the tasks ref, never forced: True when pushed, False when it lost a race
    (the remote moved: fetch, merge, push again).  Raises for anything else (the
    server's hook refused it, the remote went away)."""
    # The tip as it is now, pushed by id: the remote-tracking ref is then set to exactly
    # what the remote holds (git sets it only where a fetch refspec names it).
    tip = git("rev-parse", "--verify", layout.TASKS_REF, cwd=cwd).strip()
    try:
        git("push", "--quiet", remote, f"{tip}:{layout.TASKS_REF}", cwd=cwd, timeout=timeout)
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
    git("update-ref", remote_ref(remote), tip, cwd=cwd)
    return True


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
    return name if refspec(name) in existing.splitlines() else None


def add_refspec(cwd: Path, remote: str) -> bool:
    """Add the fetch refspec to ``remote`` unless it is there; True when added."""
    existing = git("config", "--get-all", f"remote.{remote}.fetch", cwd=cwd, check=False)
    if refspec(remote) in existing.splitlines():
        return False
    git("config", "--add", f"remote.{remote}.fetch", refspec(remote), cwd=cwd)
    return True


def remove_refspec(cwd: Path, remote: str) -> None:
    pattern = "^" + refspec(remote).replace("/", "\\/").replace(".", "\\.") + "$"
    git("config", "--unset-all", f"remote.{remote}.fetch", pattern, cwd=cwd, check=False)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"
