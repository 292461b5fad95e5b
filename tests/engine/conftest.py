from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orange import projects
from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.tasks import create_task
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task
from tests.recording import Recorder, recording_registry


@dataclass
class Env:
    repo: Path
    store: TaskStore
    engine: Engine
    recorder: Recorder
    project: projects.Project

    def make_task(
        self, status: str | None = None, body: str = "", workflow: str = "default", **fields: Any
    ) -> Task:
        """A task created by the engine, then put in ``status`` directly (test set-up)."""
        task = create_task(self.store, self.project, load_named(workflow), summary="do it")
        changes: dict[str, Any] = dict(fields)
        if status is not None:
            changes["status"] = status
        if status not in (None, "pending"):
            changes.setdefault("workspace", "proj--1")
            changes.setdefault("tmux_session", f"proj/{task.branch}")
        forced = task.with_fields(**changes).with_body(body)

        def compute(snap: Snapshot) -> Change:
            return Change(forced.id, "test.setup", f"test set-up of {forced.id}",
                          {forced.path: forced.render().encode()})  # fmt: skip

        self.store.commit(compute)
        self.recorder.clear()
        return forced

    def get(self, task_id: str) -> Task:
        return self.store.get(task_id)


@pytest.fixture
def env(repo: Path) -> Env:
    project = projects.add(repo)
    store = TaskStore.open(repo)
    registry, recorder = recording_registry()
    return Env(repo, store, Engine(store, project, registry=registry), recorder, project)
