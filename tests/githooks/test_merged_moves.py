"""The hooks of a move merged in with plain git run here only for a task this host may
start (created or taken here: `orange.engine.localqueue`): a pushed ``host`` naming this
machine is data, never a reason to start an agent here (DESIGN §8)."""

from __future__ import annotations

from pathlib import Path

from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.tasks import create_task
from orange.githooks.impl import merged_moves
from orange.home import host_name
from orange.store import layout
from orange.store.repo import open_repo
from orange.store.task import Task
from tests.githooks.test_forgery import engine, forge, forge_fields, task_text, tip

__all__ = ["engine"]  # the fixture, used by name


def test_a_bare_move_of_a_teammates_task_naming_this_host_runs_nothing_here(
    engine: Engine, repo: Path
) -> None:
    assert engine.project is not None
    mine = create_task(engine.store, engine.project, load_named("default"), summary="mine")
    old = tip(repo)
    # A teammate's task, created elsewhere with this host's name in it, then moved bare.
    theirs = Task.parse(task_text(repo, mine.id), where="mine").with_fields(
        id="zzzz9999", summary="theirs", host=host_name()
    )
    forge(repo, {layout.task_path("zzzz9999"): theirs.render()})
    forge_fields(repo, "zzzz9999", status="planning")
    forge_fields(repo, mine.id, status="planning")
    moved = merged_moves(open_repo(repo), tip(repo), old)
    assert [task.id for task in moved] == [mine.id]
