"""Every hook action a workflow may name, by name: the engine's and the runtime's."""

from __future__ import annotations

from orange.engine.actions import ENGINE_ACTIONS, DeferredRegistry, Registry


def full_registry() -> Registry:
    """The registry the composition root hands every engine; its table is built when
    a move first runs an action."""
    return DeferredRegistry(_table)


def _table() -> Registry:
    # The actions that drive tmux, worktrees and gh (and their modules) load when a
    # move first runs one: a move with no hooks never pays for them.
    from orange.hooks.actions import RUNTIME_ACTIONS
    from orange.hooks.command import RunCommand
    from orange.hooks.notify import Notify

    actions = {name: make() for name, make in ENGINE_ACTIONS.items()}
    actions.update({action.name: action for action in (Notify(), RunCommand())})
    actions.update({cls.name: cls() for cls in RUNTIME_ACTIONS})
    return Registry(actions)
