"""A teammate's cancel of a task running here, brought in by ``orange sync``: the
session this host started is killed and the worktree released, unsaved work saved in
a snapshot first (real tmux, real worktrees, a bare hub with the server hook)."""

from __future__ import annotations

import json
from pathlib import Path

from orange.githooks import shims as githooks
from orange.home import orange_home
from tests.conftest import git, run_orange
from tests.e2e.conftest import World, wait_for
from tests.githooks.test_forgery import PUSH, forge_fields
from tests.hostile import teammate_clone_of

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


def running_with_remote(world: World, tmp_path: Path, *, hook: bool) -> tuple[str, str, Path]:
    """A bare remote as origin (Orange's server hook in it, or none: a peer that takes
    any push), a task whose agent holds its session here, synced; its id, its session,
    the remote."""
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    if hook:
        githooks.install_server_hook(hub)
    git(world.repo, "remote", "add", "origin", str(hub))
    git(world.repo, "push", "-q", "origin", "main")
    world.set_harness("hold", HOLD)
    task_id = world.create("b1", "Work", "--harness", "hold")
    session = world.task(task_id).str_field("tmux_session")
    wait_for(lambda: world.tmux("has-session", "-t", session) == "" or None, 20, "the session")
    assert world.tmux("list-sessions", "-F", "#{session_name}").split() == [session]
    world.ok("sync")
    return task_id, session, hub


def test_a_teammates_cancel_ends_the_task_here(world: World, tmp_path: Path) -> None:
    task_id, _session, hub = running_with_remote(world, tmp_path, hook=True)

    teammate = {
        "ORANGE_HOME": str(tmp_path / "teammate-home"),
        "ORANGE_HOST": "teammate",
        "ORANGE_MONITOR": "off",
    }
    theirs = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(hub), str(theirs))
    for args in (("project", "add", "--name", "proj"), ("task", "cancel", "--yes", task_id)):
        result = run_orange(*args, cwd=theirs, env=teammate)
        assert result.code == 0, result.err
    assert run_orange("sync", cwd=theirs, env=teammate).code == 0
    worktree = orange_home() / "workspaces" / "proj--1"
    (worktree / "unsaved.txt").write_text("work in progress\n")

    out = json.loads(world.ok("sync", "--json").out)
    assert task_id in out["incoming"]
    assert world.status(task_id) == "cancelled"
    assert world.tmux("list-sessions", "-F", "#{session_name}").split() == []
    snapshot = f"refs/orange/snapshots/{task_id}/1"
    assert git(world.repo, "for-each-ref", "--format=%(refname)", snapshot).split() == [snapshot]
    assert not (worktree / "unsaved.txt").exists()
    rows = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    assert [(r["name"], r["task"]) for r in rows] == [("proj--1", None), ("proj--2", None)]


def test_a_forged_take_from_a_hookless_remote_ends_nothing_here(
    world: World, tmp_path: Path
) -> None:
    """A peer without Orange's server hook takes any push: a teammate's plain-git commit
    binding this host's running task to their host (no `orange task take`) comes in
    with a sync, which restores it before acting: the session and the worktree stay."""
    task_id, session, peer = running_with_remote(world, tmp_path, hook=False)
    theirs = teammate_clone_of(peer, tmp_path)
    forged = forge_fields(theirs, task_id, host="teammate")
    git(theirs, "push", "-q", "origin", PUSH)

    result = world.ok("sync")
    assert f"forged commit {forged[:10]}: restored task {task_id}" in result.out
    assert world.tmux("list-sessions", "-F", "#{session_name}").split() == [session]
    task = world.task(task_id)
    assert (task.str_field("host"), task.status) == ("testhost", "planning")
    rows = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    assert [r["task"] for r in rows] == [task_id, None]
