"""The sync merge is an entry point of the bounded reader too: a peer without the
server hook takes a push replacing a task's TASK.md with a bomb (and adds the whole
hostile set, `tests.hostile`) while this clone changed that task; `orange sync` merges,
replays, and restores or removes each hostile file, naming it."""

from __future__ import annotations

from pathlib import Path

from orange import compose, projects
from orange.store import layout
from orange.store.store import TaskStore
from orange.sync.sync import sync_project
from tests.cli.test_bounded import HOSTILE
from tests.conftest import Cli, git
from tests.githooks.test_forgery import PUSH
from tests.hostile import (
    BOMB_TASK,
    BROKEN,
    commit_by_hand,
    hostile_writes,
    peer_project,
    teammate_clone_of,
)


def test_a_sync_merging_a_bomb_into_a_changed_task_restores_it(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    project, store, task_id, peer = peer_project(cli, repo, tmp_path)

    theirs = teammate_clone_of(peer, tmp_path)
    writes: dict[str, bytes | None] = dict(hostile_writes(store.get(task_id), 20))
    bomb = HOSTILE["laughsaa"][0].replace("laughsaa", task_id)
    writes[layout.task_path(task_id)] = f"---\n{bomb}---\n".encode()
    commit_by_hand(theirs, writes)
    git(theirs, "push", "-q", "origin", PUSH)

    cli.ok("task", "update", task_id, "--summary", "changed here too", cwd=repo)
    synced = sync_project(projects.get(project.name), "origin", tmux=compose.tmux)
    said = "\n".join(synced.local)
    for path in [*(layout.task_path(t) for t in [*BROKEN, BOMB_TASK])]:
        assert path in said, path
    assert f"restored task {task_id}" in said
    task = TaskStore.open(repo).get(task_id)
    assert (task.status, task.summary) == ("pending", "changed here too")
    listed = cli.ok("task", "list", "--all", "--json", cwd=repo).json()["tasks"]
    assert all("error" not in t for t in listed)
