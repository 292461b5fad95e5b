"""``orange task take``: a task whose host is gone, moved to this host (DESIGN §7).

Its branch is fetched from the sync remote first (a warning when it was never pushed
there, or when the local branch has other commits), then the engine binds it here
(`orange.engine.taking`) and the new binding is claimed like any start.
"""

from __future__ import annotations

from pathlib import Path

from orange.engine.decide import Outcome
from orange.engine.engine import Engine
from orange.engine.taking import bound_elsewhere, take
from orange.home import host_name
from orange.runtime.git import GitFailed, git
from orange.sync.remote import BOUND, project_remote


def take_task(engine: Engine, task_id: str) -> Outcome:
    """Move ``task_id`` from the host it is bound to over to this host."""
    task = engine.store.get(task_id)
    here = host_name()
    gone = bound_elsewhere(engine, task, here)
    said = [f"task {task.id} taken over from {gone}"]
    warning = fetch_branch(engine, task.branch)
    said += [warning] if warning else []
    outcome = take(engine, task.id, here, {"explicit": True})
    outcome.messages[:0] = said
    return outcome


def fetch_branch(engine: Engine, branch: str) -> str | None:
    """Fetch ``branch`` from the sync remote into the local branch (never forced); a
    warning line when that could not be done."""
    project = engine.project
    remote = None if project is None else project_remote(project)
    if project is None or remote is None or not branch:
        return f"warning: no sync remote to fetch branch {branch} from"
    cwd = Path(project.path)
    try:
        listed = git("ls-remote", remote, f"refs/heads/{branch}", cwd=cwd, timeout=BOUND)
    except GitFailed as exc:
        return f"warning: branch {branch} not fetched: cannot reach {remote}: {exc.message}"
    if not listed.strip():
        return (
            f"warning: branch {branch} was never pushed to {remote}; the work starts from scratch"
        )
    try:
        git(
            "fetch",
            "--quiet",
            remote,
            f"refs/heads/{branch}:refs/heads/{branch}",
            cwd=cwd,
            timeout=BOUND,
        )
    except GitFailed as exc:
        return f"warning: branch {branch} not fetched from {remote}: {exc.message}"
    return None
