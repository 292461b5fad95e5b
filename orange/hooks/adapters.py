"""Adapters the engine uses at run time: TASK.md working copies and agent liveness."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.engine import AgentProbe, WorkingCopies
    from orange.projects import Project


class TmuxProbe:
    """Is the agent of the task's current state running? (DESIGN §5)"""

    def is_alive(self, task: Task, agent: str) -> bool:
        from orange.hooks.actions import agent_window
        from orange.hooks.tmux import Tmux

        session = task.str_field("tmux_session")
        if not session:
            return False
        window = agent_window(task, agent)
        pane = Tmux().pane(session, window)
        return pane is not None and not pane.dead


def runtime_adapters(project: Project) -> tuple[WorkingCopies | None, AgentProbe | None]:
    from orange.hooks.workcopy import RuntimeCopies

    return RuntimeCopies(), TmuxProbe()
