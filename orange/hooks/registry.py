"""The runtime's hook actions (worktrees, tmux, harnesses, gh), by workflow name."""

from __future__ import annotations

from orange.engine.actions import Action


def runtime_actions() -> dict[str, Action]:
    """Actions that touch the world.  Names missing here stay "not available"."""
    return {}
