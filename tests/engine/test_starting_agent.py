"""An agent that is starting is not dead (issue 10, item 5).

The race, forced: a task created in ``agent-review`` is committed with its tmux session
named before the reviewer's session exists.  The monitor's pass is run exactly there
(inside the reviewer's start, a pause point of the recording action), by a second
engine as the monitor process has, with a probe that sees no agent (as tmux would).
"""

from __future__ import annotations

from typing import Any

from orange.engine.actions import Action, HookContext
from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.fields import DEAD_FIELD
from orange.engine.monitoring import BUSY, handle_dead_session
from orange.engine.tasks import create_task
from orange.store.history import task_history
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.engine.conftest import Env
from tests.recording import recording_registry


class NoAgent:
    """tmux before the session exists: no agent anywhere."""

    def is_alive(self, task: Task, agent: str) -> bool:
        return False

    def started(self, task: Task) -> None:
        return None  # no record of this host's: the ref's agent run is all there is

    def handled(self, task: Task, death: str) -> None:
        pass


class PausedSpawn(Action):
    """spawn_reviewer whose start first runs a monitor pass (the race's instant)."""

    name = "spawn_reviewer"

    def __init__(self, inner: Action, during: list[str], monitor: Engine) -> None:
        self.inner, self.during, self.monitor = inner, during, monitor

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        return self.inner.prepare(ctx)

    def apply(self, ctx: HookContext) -> None:
        committed = ctx.services.store.get(ctx.task.id)
        assert committed.str_field("tmux_session")  # the commit names the session
        self.during.append(handle_dead_session(self.monitor, ctx.task.id))
        self.inner.apply(ctx)


def test_monitor_between_commit_and_spawn_sees_a_starting_agent(env: Env) -> None:
    monitor_registry, _ = recording_registry()
    monitor = Engine(
        TaskStore.open(env.repo),
        env.project,
        registry=monitor_registry,
        probe=NoAgent(),
        actor="monitor",
    )
    during: list[str] = []
    registry, recorder = recording_registry()
    paused = PausedSpawn(registry.get("spawn_reviewer"), during, monitor)
    engine = Engine(env.store, env.project, registry=registry.replace(spawn_reviewer=paused))
    task = create_task(
        env.store, env.project, load_named("default"), summary="review it", status="agent-review"
    )
    engine.spawn(task.id)
    assert during == [BUSY]
    after = env.store.get(task.id)
    assert after.int_field("crash_count") == 0
    assert DEAD_FIELD not in after.fields or not after.fields[DEAD_FIELD]
    assert [h.event for h in task_history(env.store, task.id)] == ["task.created", "agent.spawned"]
    assert "spawn_reviewer" in recorder.applied()
