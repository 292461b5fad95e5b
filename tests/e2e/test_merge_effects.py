"""A teammate's cancel of a task running here, brought in by a plain ``git merge`` in a
tasks checkout (no ``orange sync``): the ``post-merge`` hook carries out the move's
local effects once, on this host, which binds the task: the session this host started
is killed and the worktree released, unsaved work saved in a snapshot first.  A later
refresh, sync or replay does none of it again (real git, real tmux, a bare hub with
the server hook)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from orange.githooks import shims as githooks
from orange.home import orange_home
from orange.store import layout
from tests.conftest import git, run_orange
from tests.e2e.conftest import World, wait_for

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


def _sessions(world: World) -> list[str]:
    return world.tmux("list-sessions", "-F", "#{session_name}").split()


def _snapshots(repo: Path, task_id: str) -> list[str]:
    refs = git(repo, "for-each-ref", "--format=%(refname)", f"refs/orange/snapshots/{task_id}/")
    return refs.split()


def _effects(world: World, task_id: str) -> tuple[list[str], list[str], list[str], str]:
    """What this host did about the task: its sessions, snapshots, the ref's commits
    that name it, and the slot its worktree is bound to (if any)."""
    log = git(world.repo, "log", "--format=%H", f"--grep=Orange-Task: {task_id}", layout.TASKS_REF)
    rows = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    bound = [row["name"] for row in rows if row["task"] == task_id]
    return _sessions(world), _snapshots(world.repo, task_id), log.split(), ",".join(bound)


def test_a_teammates_cancel_merged_with_plain_git_ends_the_task_here_once(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORANGE_MONITOR", "off")  # only the git hooks act on the merge
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    githooks.install_server_hook(hub)
    git(world.repo, "remote", "add", "origin", str(hub))
    git(world.repo, "push", "-q", "origin", "main")
    world.ok("sync", "--setup")
    world.set_harness("hold", HOLD)
    task_id = world.create("b1", "Work", "--harness", "hold")
    session = world.task(task_id).str_field("tmux_session")
    wait_for(lambda: session in _sessions(world) or None, 20, "the session")
    world.ok("sync")
    run_orange("monitor", "stop", cwd=world.repo)  # (started with the agent)

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

    # Meanwhile here: another task (so the merge is a merge), work not yet committed.
    world.create("b2", "Other", "--no-spawn")
    worktree = orange_home() / "workspaces" / "proj--1"
    (worktree / "unsaved.txt").write_text("work in progress\n")
    checkout = tmp_path / "tasks"
    world.ok("tasks", "checkout", str(checkout))
    git(checkout, "fetch", "-q", "origin")  # the refspec `orange sync --setup` added
    before = _effects(world, task_id)
    assert before[0] == [session] and before[1] == [] and before[3] == "proj--1"

    merged = subprocess.run(
        ["git", "merge", "--no-edit", "refs/orange/remotes/origin/tasks"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    assert merged.returncode == 0, merged.stderr
    head = git(checkout, "rev-parse", "HEAD").strip()
    assert len(git(checkout, "rev-list", "--parents", "-n", "1", head).split()) == 3
    assert world.status(task_id) == "cancelled"

    said = f"orange: task {task_id} ended elsewhere (cancelled): "
    assert f"{said}killed tmux session {session}" in merged.stderr
    assert f"{said}released workspace proj--1" in merged.stderr
    after = _effects(world, task_id)
    sessions, snapshots, commits, bound = after
    assert sessions == [] and bound == ""
    assert snapshots == [f"refs/orange/snapshots/{task_id}/1"]
    assert not (worktree / "unsaved.txt").exists()
    snapshot_files = git(world.repo, "ls-tree", "-r", "--name-only", snapshots[0]).split()
    assert "unsaved.txt" in snapshot_files
    assert len(commits) == len(before[2]) + 1  # the teammate's cancel: none written here

    # Again: a refresh, a replay, and a sync that brings the task in once more (the
    # teammate wrote to it again) find nothing more to do here.
    world.ok("tasks", "refresh", str(checkout))
    world.ok("task", "list")  # replays what is new on the ref
    note = ("task", "edit", task_id, "--section", "Notes", "--file", "-")
    assert run_orange(*note, cwd=theirs, env=teammate, stdin="why it was cancelled\n").code == 0
    assert run_orange("sync", cwd=theirs, env=teammate).code == 0
    synced = json.loads(world.ok("sync", "--json").out)
    assert task_id in synced["incoming"] and synced["local"] == []
    sessions, snapshots, commits, bound = _effects(world, task_id)
    assert (sessions, snapshots, bound) == after[:2] + after[3:]
