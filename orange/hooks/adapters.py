"""What the engine is handed besides its actions: the agents' TASK.md working copies
(`orange.hooks.workcopy.RuntimeCopies`) and whether an agent is alive (`TmuxProbe`)."""

from __future__ import annotations

from orange.hooks.bindings import session_of
from orange.hooks.places import agent_window
from orange.hooks.tmux import Tmux
from orange.store.task import Task


class TmuxProbe:
    """Is the agent of the task's current state running? (DESIGN §5)"""

    def is_alive(self, task: Task, agent: str) -> bool:
        session = session_of(task)  # only a session this host started (DESIGN §8)
        if not session:
            return False
        window = agent_window(task, agent)
        pane = Tmux().pane(session, window)
        return pane is not None and not pane.dead
