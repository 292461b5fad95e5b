"""Making a project's tasks travel with plain git: the fetch refspec on its remote,
added by ``orange project add`` and ``orange sync --setup``, removed by ``orange project
remove``; and, on add, the remote's tasks brought in (``git clone`` brings none)."""

from __future__ import annotations

from pathlib import Path

from orange.engine.merging import plan_merge
from orange.errors import OrangeError
from orange.projects import Project
from orange.store.integrate import integrate
from orange.store.store import TaskStore
from orange.sync import remote as git_remote
from orange.sync.remote import project_remote


def setup(project: Project, remote: str | None = None) -> str | None:
    """Add the fetch refspec to ``remote`` (default: the project's); the remote's name,
    None when the repository has no such remote."""
    path = Path(project.path)
    name = remote or project_remote(project)
    if name is None:
        return None
    git_remote.require_remote(path, name)
    git_remote.add_refspec(path, name)
    return name


def bring_in(project: Project, store: TaskStore, remote: str) -> str:
    """Fetch the remote's tasks and take them in (no push): a line saying what came."""
    try:
        theirs = git_remote.fetch(store.pygit, remote)
    except OrangeError as exc:
        return f"tasks not fetched: {exc.message} (run `orange sync` later)"
    if theirs is None:
        return f"{remote} has no tasks yet"
    outcome = integrate(store, theirs, remote, plan_merge)
    came = len(outcome.plan.incoming) if outcome.plan is not None else 0
    return f"{came} task{'' if came == 1 else 's'} fetched from {remote}"


def teardown(project: Project) -> None:
    """Take the fetch refspec out of every remote of the project's repository."""
    path = Path(project.path)
    try:
        for name in git_remote.remotes(path):
            git_remote.remove_refspec(path, name)
    except OrangeError:
        pass  # a repository gone or moved: nothing of ours left to take out
