"""The sync merge is an entry point of the bounded reader too: a peer without the
server hook takes a push replacing a task's TASK.md with a bomb (and adds the whole
hostile set, `tests.hostile`) while this clone changed that task; `orange sync` merges,
replays, and restores or removes each hostile file, naming it."""

from __future__ import annotations

from pathlib import Path

from orange import projects
from orange.engine.forgery import start_record
from orange.store import layout
from orange.store.store import TaskStore
from orange.sync.setup import setup
from orange.sync.sync import sync, sync_project
from tests.cli.test_bounded import HOSTILE
from tests.conftest import Cli, git
from tests.githooks.test_forgery import PUSH
from tests.hostile import BOMB_TASK, BROKEN, commit_by_hand, hostile_writes


def test_a_sync_merging_a_bomb_into_a_changed_task_restores_it(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    peer = tmp_path / "peer.git"
    git(tmp_path, "init", "-q", "--bare", str(peer))
    git(repo, "remote", "add", "origin", str(peer))
    git(repo, "push", "-q", "origin", "main")
    project = projects.add(repo)
    store = TaskStore.open(repo)
    start_record(store)
    setup(project, "origin")
    made = cli.ok("task", "create", "b1", "mine", "--no-spawn", "--json", cwd=repo).json()
    task_id = str(made["id"])
    sync(store, "origin")

    theirs = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(peer), str(theirs))
    git(theirs, "fetch", "-q", "origin", PUSH)
    writes: dict[str, bytes | None] = dict(hostile_writes(store.get(task_id), 20))
    bomb = HOSTILE["laughsaa"][0].replace("laughsaa", task_id)
    writes[layout.task_path(task_id)] = f"---\n{bomb}---\n".encode()
    commit_by_hand(theirs, writes)
    git(theirs, "push", "-q", "origin", PUSH)

    cli.ok("task", "update", task_id, "--summary", "changed here too", cwd=repo)
    synced = sync_project(projects.get(project.name), "origin")
    said = "\n".join(synced.local)
    for path in [*(layout.task_path(t) for t in [*BROKEN, BOMB_TASK])]:
        assert path in said, path
    assert f"restored task {task_id}" in said
    task = TaskStore.open(repo).get(task_id)
    assert (task.status, task.summary) == ("pending", "changed here too")
    listed = cli.ok("task", "list", "--all", "--json", cwd=repo).json()["tasks"]
    assert all("error" not in t for t in listed)
