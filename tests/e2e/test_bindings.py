"""Local side effects need a local record (issue 9, DESIGN §8).

A teammate's task arrives in the ref (written in a second clone with plain git, then
fetched) naming this host, a live tmux session and a worktree: the monitor, a cancel and
the pool leave them alone.  A task this host's Orange spawned keeps working, and an
installation from before the records has its running task adopted once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from orange.engine.forgery import RECORD, start_record
from orange.home import orange_home
from orange.runtime import bindings
from orange.store import layout
from orange.store.layout import shard
from orange.store.lock import exclusive
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import git, make_repo
from tests.e2e.conftest import World, wait_for

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]
VICTIM = "victim"  # a tmux session of the user's own, not Orange's


def _git_in(cwd: Path, *args: str, stdin: str | None = None, env: Mapping[str, str] = {}) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
    )
    return result.stdout.strip()


def plant(world: World, tmp_path: Path, task_id: str = "", **changes: Any) -> str:
    """A teammate's task: a copy of a real task with ``changes``, committed with plain
    git in a second clone, then fetched here as a teammate's push would arrive."""
    base = world.task(world.create(f"base-{uuid.uuid4().hex[:6]}", "Base", "--no-spawn"))
    task_id = task_id or f"zz{uuid.uuid4().hex[:6]}"
    fields = {**base.fields, "id": task_id, "branch": f"mate-{task_id}", **changes}
    text = Task(fields=fields, body="\n## Context\n\nfrom a teammate\n").render()
    clone = tmp_path / f"mate-{task_id}"
    git(tmp_path, "clone", "-q", str(world.repo), str(clone))
    _git_in(clone, "fetch", "-q", "origin", "+refs/orange/tasks:refs/orange/tasks")
    index = {"GIT_INDEX_FILE": str(clone / ".git" / "mate-index")}
    _git_in(clone, "read-tree", "refs/orange/tasks", env=index)
    blob = _git_in(clone, "hash-object", "-w", "--stdin", stdin=text)
    path = f"{layout.task_dir(task_id)}/TASK.md"
    _git_in(clone, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=index)
    tree = _git_in(clone, "write-tree", env=index)
    commit = _git_in(clone, "commit-tree", tree, "-p", "refs/orange/tasks", "-m", "a task")
    _git_in(clone, "update-ref", "refs/orange/tasks", commit)
    # Taken as verified: the forgery check would put the hand-made task back first
    # (tests/githooks/test_forgery.py); here the binding rules alone must hold.  The
    # record's lock is held from the fetch on: a monitor woken by the fetch must not
    # check the task between the two.
    store = TaskStore.open(world.repo)
    with exclusive(store.repo.orange_dir() / f"{RECORD}.lock"):
        git(world.repo, "fetch", "-q", str(clone), "+refs/orange/tasks:refs/orange/tasks")
        start_record(store)
    return task_id


def _victim_session(world: World) -> str:
    """Start the user's own session (no `worker` window: to the old monitor, a task
    naming it had a dead agent); returns the pid of its process."""
    world.tmux("new-session", "-d", "-s", VICTIM, "-n", "shell", "sleep 600")
    return wait_for(lambda: world.tmux("list-panes", "-t", VICTIM, "-F", "#{pane_pid}").strip())


def _victim_alive(world: World, pid: str) -> bool:
    return world.tmux("list-panes", "-t", VICTIM, "-F", "#{pane_pid} #{pane_dead}").split() == [
        pid,
        "0",
    ]


def _events(world: World, task_id: str) -> list[str]:
    history = json.loads(world.ok("task", "show", task_id, "--json").out)["history"]
    return [h["event"] for h in history]


def test_monitor_leaves_a_fetched_task_naming_this_host_alone(world: World, tmp_path: Path) -> None:
    pid = _victim_session(world)
    task_id = plant(
        world, tmp_path, status="planning", host="testhost", workspace="proj--2",
        tmux_session=VICTIM, agent_run="r1",
    )  # fmt: skip
    # A record cut short by a crash names it: ignored, never an error.
    folder = bindings.project_dir("proj")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / task_id).write_text('{"task": "' + task_id + '", "session": "vic')
    report = json.loads(world.ok("monitor", "--once", "--json").out)
    assert report == {"checked": 0, "dead": 0, "actions": [], "stopped": False}
    task = world.task(task_id)
    assert (task.int_field("crash_count"), task.str_field("attention")) == (0, "")
    assert not task.str_field("dead_run")
    assert not [e for e in _events(world, task_id) if e.startswith("agent.")]
    assert _victim_alive(world, pid)


@pytest.mark.parametrize("where", ["pool", "dotdot", "absolute"])
def test_cancel_of_a_fetched_task_kills_and_resets_nothing(
    world: World, tmp_path: Path, where: str
) -> None:
    pid = _victim_session(world)
    world.ok("workspace", "init")
    precious = {
        "pool": orange_home() / "workspaces" / "proj--2",
        "dotdot": make_repo(orange_home() / "outside"),
        "absolute": make_repo(tmp_path / "elsewhere"),
    }[where]
    name = {"pool": "proj--2", "dotdot": "../outside", "absolute": str(precious)}[where]
    (precious / "precious.txt").write_text("the user's work\n")
    task_id = plant(
        world, tmp_path, status="planning", host="testhost", workspace=name,
        tmux_session=VICTIM,
    )  # fmt: skip
    world.ok("task", "cancel", task_id, "--force", "--yes")
    assert world.status(task_id) == "cancelled"
    assert (precious / "precious.txt").read_text() == "the user's work\n"
    assert _victim_alive(world, pid)
    assert not git(world.repo, "for-each-ref", f"refs/orange/snapshots/{task_id}")


def test_the_pool_does_not_count_a_fetched_task(world: World, tmp_path: Path) -> None:
    world.set_harness("hold", HOLD)
    planted = plant(
        world, tmp_path, status="working", host="testhost", workspace="proj--1",
        tmux_session=VICTIM,
    )  # fmt: skip
    rows = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    assert [(r["name"], r["task"]) for r in rows] == [("proj--1", None), ("proj--2", None)]
    mine = world.create("mine", "Mine", "--harness", "hold")
    assert world.task(mine).str_field("workspace") == "proj--1"
    rows = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    assert [(r["name"], r["task"]) for r in rows] == [("proj--1", mine), ("proj--2", None)]
    assert world.task(planted).str_field("workspace") == "proj--1"  # its field, unchanged

    # A command run in the worktree is about the task this host bound it to, even when
    # a fetched task naming the worktree comes first in the ref.
    first = next(i for i in (f"aa{n:06d}" for n in range(999)) if shard(i) < shard(mine))
    plant(world, tmp_path, task_id=first, status="working", host="testhost",
          workspace="proj--1")  # fmt: skip
    worktree = orange_home() / "workspaces" / "proj--1"
    world.ok("task", "update", "--summary", "from the worktree", cwd=worktree)
    assert world.task(mine).summary == "from the worktree"
    assert world.task(first).summary == "Base"


def test_an_older_installation_is_adopted_once_and_deaths_still_handled(world: World) -> None:
    world.set_harness("hold", HOLD)
    task_id = world.create("adopt-me", "Running before the upgrade", "--harness", "hold")
    task = world.wait_status(task_id, "planning")
    session = task.str_field("tmux_session")
    pid = wait_for(lambda: world.tmux("list-panes", "-t", session, "-F", "#{pane_pid}").strip())
    recorded = bindings.read("proj", task_id)
    assert recorded is not None and (recorded.workspace, recorded.session) == (
        "proj--1",
        session,
    )
    # An installation from before the records: no record store at all.
    world.ok("monitor", "stop")
    for path in bindings.project_dir("proj").iterdir():
        path.unlink()
    bindings.project_dir("proj").rmdir()
    world.ok("monitor", "start")  # its first pass adopts (the mark is written last)
    mark = bindings.project_dir("proj") / "adopted"
    said = wait_for(lambda: mark.is_file() and mark.read_text(), 20, "the adoption")
    assert "adopted 1: " + task_id in said
    adopted = bindings.read("proj", task_id)
    assert adopted is not None and adopted.adopted
    assert (adopted.workspace, adopted.session) == ("proj--1", session)

    os.killpg(int(pid), signal.SIGKILL)  # the agent dies: the monitor handles it
    crashed = wait_for(lambda: world.task(task_id).int_field("crash_count") == 1, 20)
    assert crashed and "agent.crashed" in _events(world, task_id)


def test_adoption_takes_no_worktree_outside_the_pool(world: World, tmp_path: Path) -> None:
    pid = _victim_session(world)
    world.ok("workspace", "init")  # the pool exists, so ``workspaces/../outside`` resolves
    outside = make_repo(orange_home() / "outside")
    (outside / "precious.txt").write_text("the user's work\n")
    task_id = plant(
        world, tmp_path, status="planning", host="testhost", workspace="../outside",
        tmux_session=VICTIM,
    )  # fmt: skip
    # An installation from before the records meets it: adoption runs, takes nothing.
    shutil.rmtree(bindings.project_dir("proj"))
    world.ok("monitor", "--once")
    assert bindings.read("proj", task_id) is None
    assert "adopted 0" in (bindings.project_dir("proj") / "adopted").read_text()
    world.ok("task", "cancel", task_id, "--force", "--yes")
    assert (outside / "precious.txt").read_text() == "the user's work\n"
    assert _victim_alive(world, pid)


def test_respawn_and_attach_start_nothing_for_a_fetched_task(world: World, tmp_path: Path) -> None:
    world.ok("workspace", "init")
    task_id = plant(
        world, tmp_path, status="planning", host="testhost", workspace="proj--2",
        tmux_session="proj/mate", harness="fake",
    )  # fmt: skip
    tip = git(world.repo, "rev-parse", "refs/orange/tasks")
    respawn = world.orange("task", "respawn", task_id)
    assert (respawn.code, respawn.err) == (
        1,
        f"orange: task {task_id} has no workspace bound on this host "
        "(it runs on another host, or was never started here)\n",
    )
    attach = world.process("task", "attach", task_id)
    assert attach.code == 1 and "no running tmux session on this host" in attach.err
    assert git(world.repo, "rev-parse", "refs/orange/tasks") == tip  # nothing written
    assert world.tmux("list-sessions", "-F", "#{session_name}") == ""
    assert world.prompts(task_id, "worker") == []
