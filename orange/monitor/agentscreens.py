"""No agent waits unseen: the monitor reads the panes of agents that went quiet and
knows the screens on which an agent program waits for a person (issue 25).

A Claude Code or codex that starts in a new HOME or a new checkout asks first (trust
this folder, accept bypass-permissions mode, log in) and holds the task's prompt until
someone answers, in a pane nobody looks at.  The screens are data beside each harness's
command lines (`orange.runtime.harness.SCREENS`).  When an agent shows one, its task
gets ``attention`` naming the screen and what to do (which notifies, as any attention
does), and this host's waiting mark (`orange.runtime.waiting`) that `task list` and the
dashboard show; both go when the agent moves on.

Cheap at many agents: a pane is read only once its window has printed nothing for
`QUIET` seconds (a working agent redraws all the time; one on a question is still),
and only once per quiet spell: the mark keeps the output stamp it was read at.  A
marked agent whose output changed is read at once, to clear the mark.  The panes due
on a pass are read together, in one tmux call (`look_at_all`).

An agent that exits at once with a known refusal (Claude Code as root) is read in its
dead pane before the exit rules run, and its task's ``attention`` says why and what to
do, instead of a bare crash count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from orange.engine.engine import Engine
from orange.errors import OrangeError
from orange.runtime import waiting
from orange.runtime.harness import Screen, waiting_screen
from orange.runtime.tmux import PaneInfo, Tmux
from orange.store.task import Task

QUIET = 3  # seconds without output before a pane is read
# tmux's output stamp counts whole seconds: a pane read within this many seconds of it
# may still print in that second (a TUI redraws in steps), so such a read is kept with
# no stamp, and a waiting pane is read again on the next pass.
SETTLED = 2
TOOL = {"claude": "Claude Code", "codex": "codex", "opencode": "opencode", "pi": "pi"}


class Setter:
    """How attention is set and cleared: through the monitor's engine, built on first
    use (most passes set nothing)."""

    def __init__(self, engine: Callable[[], Engine]) -> None:
        self._engine = engine

    def set(self, task_id: str, text: str) -> None:
        self._engine().set_attention(task_id, text, event="agent.waiting")

    def clear(self, task_id: str) -> None:
        self._engine().set_fields(
            task_id, {"attention": None}, "agent.moved_on", "the agent moved on"
        )


def harness_of(task: Task, window: str) -> str:
    """The harness whose screens apply to the agent in ``window``: the reviewer's
    harness in a review window, else the task's (a name, only to pick a table)."""
    if window != "worker" and task.str_field("review_harness"):
        return task.str_field("review_harness")
    return task.str_field("harness")


def due(
    look: waiting.Look | None, pane: PaneInfo, window: str, now: float, status: str = ""
) -> bool:
    """Whether the pane is to be read on this pass (``status``: the task's now)."""
    if pane.activity is None:
        return False
    if look is not None and look.since and status and look.status != status:
        return True  # a harness's hook marked it in another state: it moved on
    if look is not None and (look.window, look.pane, look.activity) == (
        window,
        pane.pane_id,
        pane.activity,
    ):
        return False  # read since its last output: the same answer
    if look is not None and look.screen:
        return True  # it moved (or was restarted): look now, to clear the mark
    return now - pane.activity >= QUIET


def attention_text(harness: str, window: str, screen: Screen) -> str:
    tool = TOOL.get(harness, harness)
    return f"agent ({window}) waits on {tool}'s {screen.name}: {screen.fix}"


class Agent(NamedTuple):
    """A live agent the pass watches: its task, its window and its pane."""

    task: Task
    window: str
    pane: PaneInfo


def look_at_all(
    project: str,
    agents: Sequence[Agent],
    tmux: Tmux,
    setter: Setter,
    now: float | None = None,
) -> list[tuple[str | None, waiting.Look | None]]:
    """Read each of the project's live ``agents``' panes if it is due (those due in one
    tmux call); set or clear each task's waiting mark and attention.  Returns, in their
    order, what was done in words (or None) and the mark as it stands."""
    now = time.time() if now is None else now
    looks = [waiting.read(project, agent.task.id) for agent in agents]
    due_panes = [
        agent.pane.pane_id
        for agent, look in zip(agents, looks, strict=True)
        if due(look, agent.pane, agent.window, now, agent.task.status)
    ]
    shown = tmux.visible_all(due_panes) if due_panes else {}
    return [
        _look(project, *agent, look, shown[agent.pane.pane_id], setter, now)
        if agent.pane.pane_id in shown
        else (None, look)
        for agent, look in zip(agents, looks, strict=True)
    ]


def _look(
    project: str,
    task: Task,
    window: str,
    pane: PaneInfo,
    look: waiting.Look | None,
    visible: str,
    setter: Setter,
    now: float,
) -> tuple[str | None, waiting.Look | None]:
    """What a due pane showing ``visible`` means for its task's mark and attention."""
    harness = harness_of(task, window)
    screen = waiting_screen(harness, visible)
    assert pane.activity is not None  # `due` said so
    stamp = pane.activity if now - pane.activity >= SETTLED else -1  # -1: read again
    new = waiting.Look(task.id, window, pane.pane_id, stamp)
    said = None
    if screen is not None:
        text = attention_text(harness, window, screen)
        if look is None or (look.screen, look.window) != (screen.name, window):
            # Newly seen: said once (a person who acks it is not told again while it
            # stays; a task already flagged with this very text is not written again).
            if task.str_field("attention") != text:
                _quietly(lambda: setter.set(task.id, text))
            said = f"task {task.id}: {text}"
        new = new._replace(screen=screen.name, attention=text)
    elif look is not None and look.since and not moved_on(look, task, window, pane):
        # Marked by the harness's own hook (`orange.monitor.notified`): whatever the
        # pane shows now (the rest of the prompt drawn, a bell, a tip), the agent waits
        # until it gives evidence it moved on.
        new = look._replace(activity=stamp)
    elif look is not None and look.screen:
        if task.str_field("attention") == look.attention:  # ours, not a person's since
            _quietly(lambda: setter.clear(task.id))
        said = f"task {task.id}: the agent ({window}) moved on from the {look.screen}"
    waiting.write(project, new)
    return said, new


def moved_on(look: waiting.Look, task: Task, window: str, pane: PaneInfo) -> bool:
    """Whether the agent a harness's hook marked as waiting has moved on: another agent
    in its place (a respawn, the state's other window), its task moved, or the person
    answered (`orange.runtime.waiting.answered`)."""
    if (look.window, look.pane, look.status) != (window, pane.pane_id, task.status):
        return True
    return waiting.answered(look)


def exit_reason(task: Task, window: str, pane: PaneInfo | None, tmux: Tmux) -> str | None:
    """A dead agent's known refusal (read in its dead pane), as an attention line."""
    if pane is None or not pane.dead:
        return None
    harness = harness_of(task, window)
    screen = waiting_screen(harness, tmux.visible(pane.pane_id, history=50), dead=True)
    if screen is None:
        return None
    tool = TOOL.get(harness, harness)
    return f"agent ({window}) exited at once, {tool}'s {screen.name}: {screen.fix}"


def _quietly(change: Callable[[], object]) -> None:
    try:
        change()
    except OrangeError:
        pass  # the task moved meanwhile (its move cleared attention): the next pass looks


def prune(project: str, live: set[str]) -> None:
    """Drop the marks of the project's tasks without a live agent here any more."""
    try:
        names = [p.name for p in waiting.folder(project).iterdir()]
    except OSError:
        return
    for name in names:
        if not name.startswith(".") and name not in live:
            waiting.clear(project, name)
