"""The hook-action registry: workflow action names → small objects (STYLE §7).

An action runs in two phases (DESIGN §4):

- ``prepare`` runs before the status is written, inside the store's write lock.  It
  checks what it needs and prepares what is reversible, returning frontmatter fields to
  commit with the move (a workspace binding, an incremented counter).  Raising rejects
  the move and nothing is written.  It may run more than once for one move (the write
  is retried when the ref moved), so it must be idempotent.
- ``apply`` runs after the write.  A failure there does not roll back the move: the
  engine records it in ``attention``.

Runtime actions (worktrees, tmux, gh) live in `orange.hooks` and are registered by
`default_registry`.  Every action is idempotent: nothing to do is success.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orange.engine.actionspec import ACTION_PARAMS, PROTECTED_FIELDS
from orange.errors import HookFailed

if TYPE_CHECKING:
    from orange.engine.engine import Engine
    from orange.engine.workflow import HookSpec, Workflow
    from orange.store.store import Snapshot
    from orange.store.task import Task


@dataclass
class HookContext:
    """What an action sees.  In ``prepare``, ``task`` is the task as it will be
    committed so far; in ``apply``, the task as committed."""

    engine: Engine
    spec: HookSpec
    workflow: Workflow
    before: Task
    task: Task
    options: Mapping[str, Any] = field(default_factory=dict)
    snapshot: Snapshot | None = None
    messages: list[str] = field(default_factory=list)
    deferred: list[Callable[[], None]] = field(default_factory=list)

    def say(self, message: str) -> None:
        """A line for the user (the CLI prints it)."""
        self.messages.append(message)

    def defer(self, effect: Callable[[], None]) -> None:
        """Run ``effect`` after every other effect of this move and its records — for an
        effect that ends the calling process (an agent killing its own window)."""
        self.deferred.append(effect)


class Action:
    """Base action: no preparation, no effect."""

    name = ""

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        return {}

    def apply(self, ctx: HookContext) -> None:
        return None


class Unavailable(Action):
    """A registered action whose implementation is not present."""

    def __init__(self, name: str) -> None:
        self.name = name

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        raise HookFailed(f"hook action {self.name} is not available in this Orange")


class Increment(Action):
    name = "increment"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        name = str(ctx.spec.get("field"))
        _check_writable(name)
        if ctx.task.fields.get(name) != ctx.before.fields.get(name):
            return {}  # already incremented in this move (a retried write)
        return {name: ctx.before.int_field(name) + 1}


class SetField(Action):
    name = "set_field"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        name = str(ctx.spec.get("field"))
        _check_writable(name)
        return {name: ctx.spec.get("value")}


class Notify(Action):
    """Tell the human: terminal bell, ``notify-send`` when present, optional webhook.

    Never blocks a move and never fails one: every channel is best effort.
    """

    name = "notify"

    def apply(self, ctx: HookContext) -> None:
        task = ctx.task
        text = str(ctx.spec.get("message") or "")
        text = text or f"task {task.id} is now {task.status}: {task.summary}"
        if sys.stderr.isatty():
            sys.stderr.write("\a")
            sys.stderr.flush()
        if shutil.which("notify-send"):
            try:
                subprocess.run(
                    ["notify-send", "Orange", text], timeout=3, check=False, capture_output=True
                )
            except (OSError, subprocess.SubprocessError):
                pass
        import urllib.request

        url = _webhook_url()
        if url:
            payload = json.dumps({"task": task.id, "status": task.status, "text": text}).encode()
            try:
                request = urllib.request.Request(
                    url, data=payload, headers={"Content-Type": "application/json"}
                )
                urllib.request.urlopen(request, timeout=3).close()
            except Exception:  # a bad URL, a refused connection, a reply that is not HTTP
                pass


class RunCommand(Action):
    """Run an argv from the workflow file; task values arrive as environment variables,
    never spliced into the command line."""

    name = "run_command"

    def apply(self, ctx: HookContext) -> None:
        argv = [str(part) for part in ctx.spec.get("argv") or []]  # type: ignore[attr-defined]
        task = ctx.task
        env = dict(os.environ)
        for key, value in task.fields.items():
            if isinstance(value, str | int) and not isinstance(value, bool):
                env[f"ORANGE_TASK_{key.upper()}"] = str(value)
        env["ORANGE_TASK_ID"] = task.id
        env["ORANGE_FROM_STATUS"] = ctx.before.status
        workdir = ctx.engine.project_path
        try:
            result = subprocess.run(
                argv, env=env, cwd=workdir, capture_output=True, text=True, timeout=300
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise HookFailed(f"run_command {argv[0]!r} could not run: {exc}") from None
        if result.returncode != 0:
            tail = " ".join(result.stderr.split())[-200:]
            raise HookFailed(f"run_command {argv[0]!r} exited {result.returncode}: {tail}")


# Fields the engine keeps for itself besides `PROTECTED_FIELDS`: the task's project and
# workflow revision (`orange.engine.tasks.ENGINE_FIELDS`) and the engine's bookkeeping
# (gate freshness baseline, agent run token, last handled death).
_ENGINE_KEPT = frozenset({"project", "workflow_rev", "gate_baseline", "agent_run", "dead_run"})


def _check_writable(name: str) -> None:
    if name in PROTECTED_FIELDS or name in _ENGINE_KEPT:
        raise HookFailed(f"a hook may not set {name!r}")


def _webhook_url() -> str:
    from orange.home import load_config

    try:
        value = load_config().get("notify", {})
    except Exception:  # a broken config must not block a move
        return ""
    return str(value.get("webhook", "")) if isinstance(value, dict) else ""


class Registry:
    """Action name → action.  The names are exactly `ACTION_PARAMS`'s."""

    def __init__(self, actions: Mapping[str, Action]) -> None:
        self._actions = dict(actions)

    def get(self, name: str) -> Action:
        try:
            return self._actions[name]
        except KeyError:
            raise HookFailed(f"unknown hook action {name!r}") from None

    def names(self) -> set[str]:
        return set(self._actions)

    def replace(self, **actions: Action) -> Registry:
        return Registry({**self._actions, **actions})


CORE_ACTIONS: Mapping[str, Callable[[], Action]] = {
    "increment": Increment,
    "set_field": SetField,
    "notify": Notify,
    "run_command": RunCommand,
}


def core_registry() -> Registry:
    """Core actions plus every runtime action marked unavailable."""
    actions: dict[str, Action] = {name: Unavailable(name) for name in ACTION_PARAMS}
    actions.update({name: make() for name, make in CORE_ACTIONS.items()})
    return Registry(actions)


def default_registry() -> Registry:
    """Core actions plus the runtime's (worktrees, tmux, gh) when installed."""
    registry = core_registry()
    try:
        from orange.hooks.registry import runtime_actions
    except ImportError:
        return registry
    return registry.replace(**runtime_actions())
