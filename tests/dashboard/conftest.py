"""The dashboard's fixtures: a registered project whose tasks are written with fixed ids
and times (so screens are the same on every run), and a way to drive the app."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from orange import projects
from orange.dashboard.app import Dashboard, make_app
from orange.engine.catalog import load_named
from orange.engine.definitions import workflow_rev, workflow_writes
from orange.engine.forgery import start_record
from orange.store.events import Change
from orange.store.layout import task_path
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task
from tests.conftest import Cli, git

NOW = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)  # the dashboard's clock in these tests

# A workflow with no done and no cancelled state: no merge, no cancel key.
NO_ENDS = """\
name: noends
version: 1
description: A review with no done and no cancelled role.
initial_statuses: [pending]
states:
  pending: {terminal: false}
  reviewing: {terminal: false, waits_for_human: true}
  archived: {terminal: true}
transitions:
  - {from: pending, to: reviewing, by: [human], hooks: []}
  - {from: reviewing, to: archived, by: [human], hooks: []}
"""


def put_task(repo: Path, task_id: str, **fields: Any) -> None:
    """Write one TASK.md with a fixed id and times (test set-up behind the engine, taken
    as verified: a move's `spawn_next` replays what is new, and would restore a task
    made in `reviewing` without its history)."""
    base: dict[str, Any] = {
        "id": task_id,
        "project": "proj",
        "branch": f"feature/{task_id}",
        "workflow": "minimal",
        "status": "pending",
        "summary": f"task {task_id}",
        "review_round": 0,
        "crash_count": 0,
        "created_at": "2026-01-02T11:00:00+00:00",
        "updated_at": "2026-01-02T11:00:00+00:00",
    }
    base.update(fields)
    workflow = load_named(str(base["workflow"]))  # committed beside it, as a create does
    base.setdefault("workflow_rev", workflow_rev(workflow))
    text = Task(fields=base, body="## Context\n\nSome context.\n", blob_id="").render()

    def compute(snap: Snapshot) -> Change:
        writes = {task_path(task_id): text.encode(), **workflow_writes(snap, workflow)}
        return Change(task_id, "task.created", f"task {task_id}: set up", writes)

    store = TaskStore.open(repo)
    store.commit(compute)
    start_record(store)


def commit_on_branch(
    repo: Path, files: dict[str, str], branch: str = "work", message: str = "a"
) -> None:
    """A branch one commit past main with these files written; main checked out again."""
    git(repo, "checkout", "-q", "-b", branch)
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", message)
    git(repo, "checkout", "-q", "main")


def put_broken(repo: Path, task_id: str) -> None:
    def compute(snap: Snapshot) -> Change:
        return Change(task_id, "task.created", "broken", {task_path(task_id): b"---\n: [\n---\n"})

    TaskStore.open(repo).commit(compute)


def add_workflow(name: str, text: str) -> None:
    folder = Path(os.environ["ORANGE_HOME"]) / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yml").write_text(text)


@pytest.fixture
def project(cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A registered project named ``proj`` (minimal workflow, pool of 2), and a tmux
    server of its own should anything start an agent (killed afterwards)."""
    socket = f"orange-test-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", socket)
    cli.ok("project", "add", "--workflow", "minimal", "--pool-size", "2", cwd=repo)
    home = Path(os.environ["ORANGE_HOME"])
    (home / "config.yml").write_text(
        yaml.safe_dump({"harnesses": {"fake": {"command": ["true", "{prompt}"], "usage": "none"}}})
    )
    yield repo
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def app_for(repo: Path, **options: Any) -> Dashboard:
    return make_app([projects.get("proj")], now=lambda: NOW, **{"poll": False, **options})


def drive(
    app: Dashboard, script: Callable[[Any], Awaitable[None]], size: tuple[int, int] = (140, 30)
) -> None:
    """Run ``app`` headless and ``script`` against its pilot."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(pilot)

    asyncio.run(main())


def table_text(app: Dashboard) -> list[list[str]]:
    """The table's rows as plain strings, in display order."""
    from textual.widgets import DataTable

    table = app.query_one("#table", DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
