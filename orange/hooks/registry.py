"""Every hook action a workflow may name, in one table: the engine's own and those that
drive the runtime.  The composition root (`orange.compose`) builds it with the runtime's
adapters and hands it to every engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from orange.engine.actions import ENGINE_ACTIONS, Action, DeferredRegistry, Registry

if TYPE_CHECKING:
    from orange.runtime.github import GitHub
    from orange.runtime.notices import Notices
    from orange.runtime.tmux import Tmux


def full_registry(tmux: Tmux, gh: Callable[[], GitHub], notices: Notices) -> Registry:
    """The registry of every action; its table is built when a move first runs one
    (``gh`` gives the GitHub adapter then)."""
    return DeferredRegistry(lambda: Registry(table(tmux, gh(), notices)))


def table(tmux: Tmux, gh: GitHub, notices: Notices) -> dict[str, Action]:
    """Action name → action, the engine's and the runtime's."""
    from orange.hooks.command import RunCommand
    from orange.hooks.notify import Notify

    actions = {name: make() for name, make in ENGINE_ACTIONS.items()}
    actions.update({action.name: action for action in (Notify(notices), RunCommand())})
    actions.update({action.name: action for action in runtime_actions(tmux, gh)})
    return actions


def runtime_actions(tmux: Tmux, gh: GitHub) -> tuple[Action, ...]:
    """The actions that drive worktrees, tmux and remotes."""
    # Loaded when a move first runs an action: a move with no hooks never pays for the
    # modules of tmux, worktrees and gh.
    from orange.hooks import agents, queue, remotes, sessions, workspaces

    return (
        workspaces.AcquireWorkspace(),
        workspaces.ReleaseWorkspace(),
        agents.SpawnAgent(tmux),
        agents.SpawnReviewer(tmux),
        agents.NotifyWorker(tmux),
        sessions.KillSession(tmux),
        sessions.KillReviewer(tmux),
        sessions.StopAgents(tmux),
        queue.SpawnNext(),
        remotes.PushBranch(),
        remotes.DeleteRemoteBranch(),
        remotes.CreatePr(gh),
    )
