"""Every hook action a workflow may name, by name: the engine's and the runtime's."""

from __future__ import annotations

from orange.engine.actions import ENGINE_ACTIONS, Registry
from orange.hooks.actions import RUNTIME_ACTIONS
from orange.hooks.command import RunCommand
from orange.hooks.notify import Notify


def full_registry() -> Registry:
    """The registry the composition root hands every engine."""
    actions = {name: make() for name, make in ENGINE_ACTIONS.items()}
    actions.update({action.name: action for action in (Notify(), RunCommand())})
    actions.update({cls.name: cls() for cls in RUNTIME_ACTIONS})
    return Registry(actions)
