"""The runtime's hook actions (worktrees, tmux, harnesses, gh), by workflow name."""

from __future__ import annotations

from orange.engine.actions import Action


def runtime_actions() -> dict[str, Action]:
    from orange.hooks.actions import runtime_action_table

    return runtime_action_table()
