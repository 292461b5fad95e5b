"""A recording stand-in for the runtime's hook actions (a test double).

The engine's actions, notify and run_command stay real; every action that drives
worktrees, tmux or remotes records each
``prepare``/``apply`` call and makes the field changes the real one would make
(workspace binding, tmux session), without touching worktrees or tmux.  ``fail``
makes chosen actions raise in the chosen phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orange.engine.actions import Action, HookContext, Registry
from orange.errors import HookFailed
from orange.home import host_name
from orange.hooks.registry import full_registry, runtime_actions
from orange.runtime.github import GitHub
from orange.runtime.notices import Notices
from orange.runtime.tmux import Tmux

# The actions that drive worktrees, tmux and remotes; the rest stay real.
_RUNTIME = sorted(action.name for action in runtime_actions(Tmux(), GitHub()))


@dataclass
class Call:
    phase: str
    action: str
    task_id: str
    status: str
    params: dict[str, Any]


@dataclass
class Recorder:
    calls: list[Call] = field(default_factory=list)
    fail: dict[tuple[str, str], str] = field(default_factory=dict)  # (action, phase) -> msg

    def applied(self) -> list[str]:
        return [c.action for c in self.calls if c.phase == "apply"]

    def clear(self) -> None:
        self.calls.clear()


class _Recorded(Action):
    def __init__(self, name: str, recorder: Recorder) -> None:
        self.name = name
        self.recorder = recorder

    def _record(self, phase: str, ctx: HookContext) -> None:
        self.recorder.calls.append(
            Call(phase, self.name, ctx.task.id, ctx.task.status, dict(ctx.spec.params))
        )
        message = self.recorder.fail.get((self.name, phase))
        if message is not None:
            raise HookFailed(message)

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        self._record("prepare", ctx)
        task = ctx.task
        bound_here = task.str_field("workspace") and task.str_field("host") == host_name()
        if self.name == "acquire_workspace" and not bound_here:
            return {"workspace": f"{task.project}--1", "host": host_name()}
        if self.name == "release_workspace":
            return {"workspace": None}
        if self.name in ("spawn_agent", "spawn_reviewer"):
            return {"tmux_session": f"{task.project}/{task.branch}"}
        if self.name == "kill_session":
            return {"tmux_session": None}
        return {}

    def apply(self, ctx: HookContext) -> None:
        self._record("apply", ctx)


def recording_registry(recorder: Recorder | None = None) -> tuple[Registry, Recorder]:
    recorder = recorder or Recorder()
    actions: dict[str, Action] = {name: _Recorded(name, recorder) for name in _RUNTIME}
    return full_registry(Tmux(), GitHub, Notices()).replace(**actions), recorder
