"""The monitor's readers against a hostile tasks ref (issue: an alias bomb made the
monitor spin, so agent deaths and forgeries went unhandled): every bomb of the one
bounded reader, a file that is not text, a task under an alias-bomb definition naming a
session, and many tasks, read by `orange monitor --once` through its real entry point.
The pass ends, and a forgery next to them is still restored in it."""

from __future__ import annotations

from pathlib import Path

from orange.engine.forgery import start_record
from orange.home import orange_home
from orange.store import layout
from orange.store.events import Change
from orange.store.store import TaskStore
from tests.conftest import Cli
from tests.githooks.test_hostile_definitions import orange
from tests.hostile import BOMB_TASK, BROKEN, commit_by_hand, hostile_writes

MANY = 200


def test_a_pass_over_hostile_tasks_ends_and_still_restores_a_forgery(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    good = str(cli.ok("task", "create", "good", "good task", "--no-spawn", "--json").json()["id"])
    store = TaskStore.open(repo)
    template = store.get(good)
    hostile = hostile_writes(template, MANY)
    moved = {layout.task_path(good): template.with_fields(status="done").render().encode()}

    # In the history this host has verified (an older Orange's, adopted): only the
    # monitor's listing and definitions read them; a forged move arrives after.
    store.commit(lambda snap: Change("x", "test", "hostile", dict(hostile)))
    start_record(store)
    forged = commit_by_hand(repo, dict(moved))
    first = orange("monitor", "--once", cwd=repo)
    assert first.code == 0, first.err
    task = TaskStore.open(repo).get(good)
    assert task.status == "pending"
    assert f"forged change in commit {forged[:10]}" in task.str_field("attention")

    # Pushed by hand: the monitor's replay reads every one, and removes what has no
    # legal state (each named), keeping the legal ones.
    gone: dict[str, bytes | None] = dict.fromkeys(hostile)
    store.commit(lambda snap: Change("x", "test", "cleared", gone))
    start_record(store)
    again = commit_by_hand(repo, dict(hostile))
    second = orange("monitor", "--once", cwd=repo)
    assert second.code == 0, second.err
    log = (orange_home() / "logs" / "monitor.log").read_text()
    assert log.count("pass (--once) ended") == 2
    warned = next(line for line in log.splitlines() if f"forged commit {again[:10]}" in line)
    for task_id in [*BROKEN, BOMB_TASK]:
        assert layout.task_path(task_id) in warned, task_id
    listed = cli.ok("task", "list", "--all", "--json", cwd=repo).json()["tasks"]
    assert sorted(t["id"] for t in listed) == sorted([good, *(f"many{n:04d}" for n in range(MANY))])
