"""Claude Code's Notification hook for Orange: ``python -P -m orange.monitor.notified``.

Claude Code runs its Notification hooks when it waits for the user
(https://code.claude.com/docs/en/hooks, "Notification"): the event on stdin carries
``notification_type`` (``permission_prompt``: it asks before a tool; ``idle_prompt``:
its answer has waited 60 s for the user's reply; ``elicitation_dialog``: an MCP server
asks for input; others, such as ``auth_success``, wait for nobody), ``message``
(Claude's words for it) and ``cwd``.  `orange install --harness claude` registers this
module beside the stop hook, so a waiting agent is named at once, where reading its pane
(`orange.monitor.agentscreens`) knows only the screens listed for the program, and a question
the model asked in plain words is no screen at all.

It does what the monitor does for a known screen: the task gets ``attention`` naming
what the agent waits for (which notifies), and this host's waiting mark, which `task
list` and the dashboard show.  The monitor clears both once the agent moved on: a new
entry from the person's side in its transcript (the event's ``transcript_path``), its
task moved, its pane replaced (`orange.monitor.agentscreens.look_at_all`); never because the
pane's text changed, since the hook may run while the prompt is still being drawn.  It
acts only

- for the agent process Orange started (`orange.agent_hooks.stop.started_by_orange`: a
  session nested in the agent inherits its environment, not its ancestry),
- on the task bound on this host to the worktree it runs in, which must be the task of
  the agent's ``ORANGE_TASK_ID`` (the environment alone is not trusted, DESIGN §8),
- when that agent is the one the task's state waits on (a persistent worker idle
  while its work is reviewed waits for nobody), in a state that does not wait for a
  person anyway.

It never fails Claude Code: anything unexpected exits 0 having done nothing.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from orange import projects
from orange.agent_hooks.stop import AGENT_PID, started_by_orange
from orange.compose import build_engine, tmux
from orange.engine.caller import TASK_VARIABLE
from orange.errors import OrangeError
from orange.monitor.agentscreens import TOOL
from orange.runtime import bindings, waiting
from orange.runtime.places import agent_window

MAX_EVENT = 64 * 1024  # bytes of hook input read
MAX_MESSAGE = 200  # characters of Claude's own words kept in the attention line
# What each kind of notification waits for, in the words of a waiting screen's name.
WAITS: dict[str, str] = {
    "permission_prompt": "permission prompt",
    "idle_prompt": "question to you",
    "elicitation_dialog": "input dialog",
}


def read_event(stream: BinaryIO) -> dict[str, Any]:
    try:
        data = json.loads(stream.read(MAX_EVENT + 1)[:MAX_EVENT])
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def attention_text(window: str, kind: str, message: str) -> str:
    """The attention line: what the agent waits for, and Claude's own words (control
    characters dropped, cut short)."""
    words = " ".join("".join(c if c.isprintable() else " " for c in message).split())
    if len(words) > MAX_MESSAGE:
        words = words[: MAX_MESSAGE - 1] + "…"
    said = f' ("{words}")' if words else ""
    return f"agent ({window}) waits on {TOOL['claude']}'s {kind}{said}: attach and answer"


def handle(event: dict[str, Any], env: dict[str, str], parent: int) -> str | None:
    """Set the attention and the waiting mark for ``event``; what was done, in words."""
    kind = WAITS.get(str(event.get("notification_type", "")))
    task_id = env.get(TASK_VARIABLE, "")
    if kind is None or not task_id or not started_by_orange(env.get(AGENT_PID), parent):
        return None
    place = bindings.pool_worktree(Path(str(event.get("cwd") or os.getcwd())))
    if place is None:
        return None
    project_name, worktree = place
    record = bindings.read(project_name, task_id)
    if record is None or record.workspace != worktree:
        return None  # the worktree is not this task's: the environment is not trusted
    project = projects.get(project_name)
    engine = build_engine(project, actor="monitor")
    task = engine.store.snapshot().task(task_id)
    if task is None:
        return None
    state = engine.workflow(task).states.get(task.status)
    role = env.get("ORANGE_AGENT_ROLE", "")
    if state is None or state.agent != role or engine.workflow(task).waits_for_human(task.status):
        return None
    window = agent_window(task, state.agent)
    text = attention_text(window, kind, str(event.get("message") or ""))
    pane = tmux().pane(task.str_field("tmux_session"), window)
    if pane is not None and pane.activity is not None:
        # Kept until the agent gives evidence it moved on (a new entry from the
        # person's side in its transcript, its task moved, its pane replaced): the
        # monitor reads the pane then, and clears both (`agentscreens.look_at_all`).
        transcript, offset = _transcript(event.get("transcript_path"))
        look = waiting.Look(
            task.id, window, pane.pane_id, pane.activity, kind, text,
            time.time(), task.status, transcript, offset,
        )  # fmt: skip
        waiting.write(project_name, look)
    if task.str_field("attention") != text:
        engine.set_attention(task.id, text, event="agent.waiting")
    return f"task {task.id}: {text}"


def _transcript(path: object) -> tuple[str, int]:
    """Claude Code's session file named by the event, and its length now ("", 0: none
    given, or not a regular file)."""
    if not isinstance(path, str) or not path:
        return "", 0
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return "", 0
    return (path, found.st_size) if stat.S_ISREG(found.st_mode) else ("", 0)


def main() -> int:
    try:
        handle(read_event(sys.stdin.buffer), dict(os.environ), os.getppid())
    except (OrangeError, OSError, ValueError):
        pass  # never in Claude Code's way: the monitor's pane reading still looks
    return 0


if __name__ == "__main__":
    sys.exit(main())
