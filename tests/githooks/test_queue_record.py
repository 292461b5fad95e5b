"""A task id in this host's queue record names the task this host created, not
whatever later holds that id: a teammate may legally cancel a queued task, delete it
and create another under the same id with their own text; that task waits here like
any teammate's (issue 24: this host starts only what a human here asked for)."""

from __future__ import annotations

from pathlib import Path

from orange import compose
from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.localqueue import queued
from orange.engine.tasks import create_task
from orange.hooks.queue import start_next
from orange.store import layout
from orange.store.task import Task
from orange.sync.sync import sync_project
from tests.conftest import git
from tests.githooks.test_forgery import PUSH, engine, forge, push, task_text, tip
from tests.hostile import teammate_clone_of

__all__ = ["engine"]  # the fixture, used by name


def made_again_by_a_teammate(engine: Engine, repo: Path, hub: Path, tmp_path: Path) -> str:
    """A task created (so queued) here and pushed; a teammate cancels it, deletes it and
    creates their own under its id, every step legal, and pushes that to the hub.  Its
    id."""
    assert engine.project is not None
    mine = create_task(engine.store, engine.project, load_named("default"), summary="mine")
    assert queued(engine.store, engine.store.snapshot(), engine.project.name) == [mine.id]
    assert push(repo).returncode == 0

    theirs = teammate_clone_of(hub, tmp_path)
    path = layout.task_path(mine.id)
    was = Task.parse(task_text(theirs, mine.id), where="mine")
    forge(theirs, {path: was.with_fields(status="cancelled").render()}, "cancel")
    forge(theirs, {path: None}, "delete")
    again = was.with_fields(summary="run my script", created_at="2026-01-01T00:00:00Z")
    forge(theirs, {path: again.render()}, "create")
    pushed = git(theirs, "push", "-q", "origin", PUSH, check=False)
    assert tip(hub) == tip(theirs), pushed  # every step legal: the hub takes it
    return mine.id


def test_a_queued_id_deleted_and_made_again_by_a_teammate_is_not_started(
    engine: Engine, repo: Path, hub: Path, tmp_path: Path
) -> None:
    task_id = made_again_by_a_teammate(engine, repo, hub, tmp_path)
    assert engine.project is not None
    sync_project(engine.project, "hub", tmux=compose.tmux)  # replays what came in
    now = engine.store.get(task_id)
    assert (now.status, now.summary) == ("pending", "run my script")
    assert queued(engine.store, engine.store.snapshot(), engine.project.name) == []


def test_spawn_next_replays_what_came_in_before_it_picks(
    engine: Engine, repo: Path, hub: Path, tmp_path: Path
) -> None:
    """The same history brought in by a fetch of the user's own into the tasks ref (no
    sync, no monitor pass yet): the next start replays it first, and starts nothing."""
    task_id = made_again_by_a_teammate(engine, repo, hub, tmp_path)
    assert engine.project is not None
    git(repo, "fetch", "-q", "hub", f"+{layout.TASKS_REF}:{layout.TASKS_REF}")

    said = start_next(engine)
    now = engine.store.get(task_id)
    assert (now.status, now.summary) == ("pending", "run my script"), said
    assert said == []
    assert queued(engine.store, engine.store.snapshot(), engine.project.name) == []
