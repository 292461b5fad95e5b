"""The composition root: the one place an engine is built (DESIGN §1, STYLE §1).

Every driver — the CLI, the monitor, the git hooks, the dashboard — gets its engine
from `build_engine`: the project's store, the registry of every hook action, the
agents' TASK.md working copies, the tmux liveness probe, the claim of a task on the
sync remote before its agent starts, and who is acting; and the process's one tmux
adapter from `tmux` and GitHub adapter from `gh` (the hook actions get them when the
registry is built).  Nothing
below this module chooses an implementation: the engine uses what it is handed.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from orange.engine.caller import ENGINE, Caller, from_env
from orange.runtime.adapters import LocalCopies, LocalUsage, TmuxProbe

if TYPE_CHECKING:
    from orange.engine.actions import LocalRelease, Registry
    from orange.engine.claims import BranchShare, Claim
    from orange.engine.engine import Engine
    from orange.engine.ports import AgentProbe, Notifier, UsageSource, WorkingCopies
    from orange.engine.services import Services
    from orange.projects import Project
    from orange.runtime.github import GitHub
    from orange.runtime.notices import Notices
    from orange.runtime.tmuxclient import TmuxClient
    from orange.store.store import TaskStore
    from orange.store.task import Task


class Runtime(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """What an engine is handed besides its store: the hook actions, the agents'
    working copies, the liveness probe, who tells a human when a task needs one."""

    registry: Registry
    copies: WorkingCopies | None
    probe: AgentProbe | None
    release: LocalRelease | None = None  # undoes this host's own recorded bindings
    notifier: Notifier | None = None
    claim: Claim | None = None  # pushes a new binding before its agent starts
    share: BranchShare | None = None  # pushes the branch of a task that waits for a human
    usage: UsageSource | None = None  # what the agent programs recorded (the ledger)


@cache
def tmux() -> TmuxClient:
    """This process's one tmux adapter, handed to every driver and hook action that
    talks to tmux (it follows ``$ORANGE_TMUX_SOCKET`` as it is at each call)."""
    # Imported here: a command that never talks to tmux does not load the adapter.
    from orange.runtime.tmuxclient import TmuxClient

    return TmuxClient()


@cache
def gh() -> GitHub:
    """This process's one GitHub adapter (pull requests through ``gh``), handed to every
    driver and hook action that opens or reads a pull request."""
    # Imported here: only a command that touches a pull request loads it.
    from orange.runtime.github import GitHub

    return GitHub()


@cache
def notices() -> Notices:
    """This process's one adapter that tells a human (desktop, webhook): the engine's
    notifier, the ``notify`` action's and `orange notify --test`'s."""
    from orange.runtime.notices import Notices

    return Notices()


@cache
def copies() -> LocalCopies:
    """This process's one reader and writer of the agents' TASK.md working copies: every
    engine's, and `task update`'s, which changes a field without an engine."""
    return LocalCopies()


@cache
def runtime() -> Runtime:
    """This host's runtime (its parts keep no state: built once per process)."""
    # Imported here, as the engine in `build_engine`: this module stays cheap to import
    # for a command that only needs an adapter (`task update --summary`, `copies`).
    from orange.hooks.registry import full_registry

    return Runtime(
        full_registry(tmux(), gh, notices()),
        copies(),
        TmuxProbe(tmux),
        _release,
        notices(),
        _claim,
        _share,
        LocalUsage(),
    )


def _carries_tasks(engine: Services) -> bool:
    """Whether a remote of the repository fetches the tasks ref (the mark of a project
    that syncs, `orange.sync.remote.project_remote`), read from the git config already
    open: a project without one never loads the sync machinery."""
    try:
        entries = list(engine.store.pygit.config)
    except Exception:  # an unreadable config: let the sync code say what is wrong
        return True
    return any(
        entry.name.startswith("remote.")
        and entry.name.endswith(".fetch")
        and str(entry.value).startswith(("refs/orange/tasks:", "refs/orange/task*:"))
        for entry in entries
    )


def _release(engine: Services, task: Task, *, force: bool) -> list[str]:
    """The engine's `LocalRelease`: `orange.runtime.unbind.release_recorded_bindings`."""
    # Imported here: releasing drives git, tmux and teardown commands, and only a
    # human's cancel of an untrusted task uses it.
    from orange.runtime.unbind import release_recorded_bindings

    return release_recorded_bindings(engine, task, force=force, tmux=tmux)


def _claim(engine: Services, task: Task, commit: str) -> str | None:
    """The engine's `Claim`: `orange.sync.claim.claim_on_remote`."""
    if not _carries_tasks(engine):
        return None
    # Imported here: the sync machinery (git, the merge and the workflow's rules) loads
    # only for a start that binds a task, never for an agent's own moves.
    from orange.sync.claim import claim_on_remote

    return claim_on_remote(engine, task, commit, tmux=tmux)


def _share(engine: Services, task: Task) -> str | None:
    """The engine's `BranchShare`: `orange.sync.claim.share_branch`."""
    if not _carries_tasks(engine):
        return None
    # Imported here, as for `_claim`: only a move into a state that waits for a human.
    from orange.sync.claim import share_branch

    return share_branch(engine, task)


def build_engine(
    project: Project,
    *,
    actor: str | None = None,
    store: TaskStore | None = None,
    caller: Caller | None = None,
) -> Engine:
    """The engine for ``project``'s tasks, acting as ``actor`` (``cli``, ``agent``,
    ``monitor``, ``git-hook``; None: from the environment) on behalf of ``caller``:
    the engine for the monitor, else who this process is (`process_caller`)."""
    from orange.engine.engine import Engine
    from orange.projects import open_store
    from orange.runtime.adopt import ensure_adopted

    parts = runtime()
    ensure_adopted(project, tmux=tmux)  # once per project: an older installation's running tasks
    if caller is None:
        caller = ENGINE if actor == "monitor" else process_caller()
    return Engine(
        store if store is not None else open_store(project),
        project,
        registry=parts.registry,
        copies=parts.copies,
        probe=parts.probe,
        actor=actor,
        release=parts.release,
        caller=caller,
        notifier=parts.notifier,
        claim=parts.claim,
        share=parts.share,
        usage=parts.usage,
    )


def process_caller() -> Caller:
    """Who this process acts for: the agent Orange started it as (``ORANGE_AGENT_ROLE``
    and ``ORANGE_TASK_ID`` in its environment), else a human."""
    return from_env(os.environ)
