"""The hook actions that end an agent: ``kill_session`` (the task's tmux session, and
its recorded binding), ``kill_reviewer`` (the reviewer's window) and ``stop_agents``
(every agent of the session, the session and its panes kept: the budget's stop).  Only a session
this host recorded starting is ended (`orange.runtime.bindings`, DESIGN §8); an agent
ending its own session is set aside and killed last (`orange.runtime.ending`).  Once
the agents are gone, what their programs wrote since the move's own usage record (the
lines a program writes on its way out) is committed as a record of its own
(`orange.engine.engine.Engine.record_left`), read from the worktree the task had."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orange.engine.actions import Action, HookContext
from orange.runtime import bindings
from orange.runtime.ending import end, stop_agents
from orange.runtime.places import reviewer_window
from orange.runtime.tmux import Tmux


class KillSession(Action):
    name = "kill_session"

    def __init__(self, tmux: Tmux) -> None:
        self.tmux = tmux

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        return {"tmux_session": None} if ctx.before.str_field("tmux_session") else {}

    def apply(self, ctx: HookContext) -> None:
        session = bindings.session_of(ctx.before)  # a session name from the ref alone: never
        if session:
            end(self.tmux, ctx.defer, session, then=_record_left(ctx))
        if not ctx.task.str_field("tmux_session"):  # else a later spawn recorded its own
            bindings.record(ctx.before.project, ctx.before.id, session="", run="")


class KillReviewer(Action):
    name = "kill_reviewer"

    def __init__(self, tmux: Tmux) -> None:
        self.tmux = tmux

    def apply(self, ctx: HookContext) -> None:
        session = bindings.session_of(ctx.before)
        if session:
            window = reviewer_window(ctx.before)
            end(self.tmux, ctx.defer, session, window, then=_record_left(ctx))


class StopAgents(Action):
    """The budget's stop (`orange.engine.ledger.BUDGET_HOOKS`): the task's agents end,
    their session stays bound (each pane shows how its agent ended), so a person who
    raises the budget sends the task back to work and its worker starts again there."""

    name = "stop_agents"

    def __init__(self, tmux: Tmux) -> None:
        self.tmux = tmux

    def apply(self, ctx: HookContext) -> None:
        session = bindings.session_of(ctx.before)
        if session:
            stop_agents(self.tmux, ctx.defer, session, then=_record_left(ctx))


def _record_left(ctx: HookContext) -> Callable[[], object]:
    task_id, holder = ctx.task.id, ctx.before
    return lambda: ctx.services.record_left(task_id, holder)
