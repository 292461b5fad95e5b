"""The engine's `orange.engine.claims.Claim` on a project with a sync remote: one
task, one runner (DESIGN §7).

The binding commit is pushed within `claim_bound` seconds (``claim_timeout`` in
``$ORANGE_HOME/config.yml``, else `BOUND`: 10).  A push that lost its race
fetches and merges (`orange.sync.sync`): the claim already on the remote wins the
binding (`orange.store.taskmerge`), so this host finds the task bound elsewhere,
releases the worktree it took and starts nothing.  A remote that cannot be reached
refuses the start: the binding commit, never pushed, is taken back and the worktree
released (``--offline`` starts without a claim).  `share_branch` pushes the branch of
a task that waits for a human.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from orange.errors import InvalidInput, OrangeError
from orange.home import load_config, orange_home
from orange.runtime.git import GitFailed, git
from orange.runtime.unbind import release_local
from orange.store.task import Task
from orange.sync.remote import BOUND, claim_remote

if TYPE_CHECKING:
    from orange.engine.services import Services
    from orange.runtime.tmux import Tmux


def claim_on_remote(
    engine: Services, task: Task, commit: str, *, tmux: Callable[[], Tmux]
) -> str | None:
    """Push ``task``'s binding; None when it is this host's, else where it runs (and
    this host's binding is undone, its session ended through ``tmux``)."""
    project = engine.project
    remote = None if project is None else claim_remote(project)
    if project is None or remote is None:
        return None
    # Imported here: the merge and the workflow's rules load only on a syncing project.
    from orange.sync.sync import sync

    bound = None
    try:
        bound = claim_bound()
        sync(engine.store, remote, bound=bound)
    except OrangeError as exc:
        from orange.engine.forgery import take_back  # the verified record goes back too

        taken_back = take_back(engine.store, commit)
        _release(engine, task, tmux)
        kept = "" if taken_back else " (its move stays committed here)"
        hint = "check the remote, or pass --offline to start it without a claim"
        raise InvalidInput(
            f"task {task.id} not started{kept}: cannot claim it on {remote}: {exc.message}",
            hint=exc.hint if bound is None else hint,  # (None: the setting was wrong)
        ) from None
    now = engine.store.get(task.id)
    host = now.str_field("host")
    if (host, now.str_field("workspace")) == (task.str_field("host"), task.str_field("workspace")):
        return None
    said = _release(engine, task, tmux)
    where = f"running on {host}" if host else "taken elsewhere"
    return "; ".join([f"task {task.id} not started here: it is {where} (claimed first)", *said])


def claim_bound() -> float:
    """Seconds a claim may take (its fetches, merges and pushes): ``claim_timeout`` in
    ``$ORANGE_HOME/config.yml``, else `BOUND`."""
    value = load_config().get("claim_timeout", BOUND)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InvalidInput(
            f"{orange_home() / 'config.yml'}: claim_timeout must be a number of seconds "
            f"above 0, not {value!r}",
            hint="fix or remove claim_timeout in that file",
        )
    return float(value)


def share_branch(engine: Services, task: Task) -> str | None:
    """The engine's `BranchShare`: push the task's branch to the sync remote, never
    forced, within `BOUND` seconds; a warning line when it was not pushed."""
    project = engine.project
    remote = None if project is None else claim_remote(project)
    if project is None or remote is None:
        return None
    spec = f"refs/heads/{task.branch}:refs/heads/{task.branch}"
    try:
        git("push", "--quiet", remote, spec, cwd=Path(project.path), timeout=BOUND)
    except GitFailed as exc:
        lines = [line.strip() for line in exc.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else exc.message
        return f"warning: branch {task.branch} of task {task.id} not pushed to {remote}: {why}"
    return None


def _release(engine: Services, task: Task, tmux: Callable[[], Tmux]) -> list[str]:
    assert engine.project is not None
    try:
        return release_local(engine.project, task, force=True, tmux=tmux)
    except OrangeError as exc:
        return [f"warning: kept this host's worktree of task {task.id}: {exc.message}"]
