"""A teammate's cancel, then a teammate's take, of tasks running here, each brought in by
a plain ``git merge`` in a tasks checkout (no ``orange sync``): the ``post-merge`` hook
ends them here once, on this host, which binds them: the session this host started is
killed and the worktree released, unsaved work saved in a snapshot first.  A later
refresh, replay or sync does none of it again (real git, real tmux, a bare hub with
the server hook)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orange.home import orange_home
from orange.store import layout
from tests.conftest import git, run_orange
from tests.e2e.conftest import World, add_hub, sessions_on, teammate_clone, wait_for

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


@dataclass
class Team:
    world: World
    theirs: Path  # the teammate's clone
    env: dict[str, str]  # the teammate's Orange (home, host, tmux server)
    checkout: Path  # this host's tasks checkout
    running: list[str]  # the tasks this host runs

    def teammate(self, *args: str, stdin: str | None = None) -> None:
        result = run_orange(*args, cwd=self.theirs, env=self.env, stdin=stdin)
        assert result.code == 0, result.err

    def merge(self) -> str:
        """A task written here (so the merge is a merge), then a plain ``git fetch``
        and ``git merge`` of the teammate's tasks in the checkout; what git printed."""
        self.world.create(f"local-{len(self.running)}", "Local", "--no-spawn")
        self.running.append("")  # (a fresh branch name for the next one)
        self.world.ok("tasks", "refresh", str(self.checkout))
        git(self.checkout, "fetch", "-q", "origin")  # the refspec `sync --setup` added
        merged = subprocess.run(
            ["git", "merge", "--no-edit", "refs/orange/remotes/origin/tasks"],
            cwd=self.checkout,
            capture_output=True,
            text=True,
            check=False,
        )
        assert merged.returncode == 0, merged.stderr
        head = git(self.checkout, "rev-parse", "HEAD").strip()
        assert len(git(self.checkout, "rev-list", "--parents", "-n", "1", head).split()) == 3
        return merged.stderr


def _effects(world: World, task_id: str) -> tuple[list[str], list[str], list[str], str]:
    """What this host did about the task: its sessions here, its snapshots, the ref's
    commits that name it, and the slot bound to it here (if any)."""
    log = git(world.repo, "log", "--format=%H", f"--grep=Orange-Task: {task_id}", layout.TASKS_REF)
    refs = git(world.repo, "for-each-ref", "--format=%(refname)", "refs/orange/snapshots/")
    snapshots = [ref for ref in refs.split() if ref.split("/")[3] == task_id]
    rows = json.loads(world.ok("workspace", "list", "--json").out)["workspaces"]
    bound = [row["name"] for row in rows if row["task"] == task_id]
    session = world.task(task_id).str_field("tmux_session")
    here = [s for s in sessions_on(world.socket) if s == session]
    return here, snapshots, log.split(), ",".join(bound)


@pytest.fixture
def team(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Team]:
    """This host runs two tasks (a hub with the server hook); a teammate's clone."""
    monkeypatch.setenv("ORANGE_MONITOR", "off")  # only the git hooks act on the merges
    hub = add_hub(world, tmp_path)
    world.set_harness("hold", HOLD)
    running = [world.create(branch, "Work", "--harness", "hold") for branch in ("b1", "b2")]
    sessions = {world.task(task_id).str_field("tmux_session") for task_id in running}
    wait_for(lambda: sessions <= set(sessions_on(world.socket)), 20, "the sessions")
    world.ok("sync")
    run_orange("monitor", "stop", cwd=world.repo)  # (started with the agents)
    theirs, env = teammate_clone(world, tmp_path, hub, {"harnesses": world.harnesses})
    checkout = tmp_path / "tasks"
    world.ok("tasks", "checkout", str(checkout))
    made = Team(world, theirs, env, checkout, running)
    try:
        yield made
    finally:
        subprocess.run(["tmux", "-L", env["ORANGE_TMUX_SOCKET"], "kill-server"], check=False)


def test_teammates_cancel_and_take_merged_with_plain_git_end_the_tasks_here_once(
    team: Team,
) -> None:
    world = team.world
    cancelled, taken = team.running[:2]
    team.teammate("task", "cancel", "--yes", cancelled)
    team.teammate("sync")
    worktree = orange_home() / "workspaces" / "proj--1"
    (worktree / "unsaved.txt").write_text("work in progress\n")
    before = _effects(world, cancelled)
    assert len(before[0]) == 1 and before[1] == [] and before[3] == "proj--1"

    said = team.merge()
    assert world.status(cancelled) == "cancelled"
    ended = f"orange: task {cancelled} ended elsewhere (cancelled): "
    assert f"{ended}killed tmux session {before[0][0]}" in said
    assert f"{ended}released workspace proj--1" in said
    after = _effects(world, cancelled)
    assert after[0] == [] and after[3] == ""
    assert after[1] == [f"refs/orange/snapshots/{cancelled}/1"]
    assert "unsaved.txt" in git(world.repo, "ls-tree", "-r", "--name-only", after[1][0]).split()
    assert not (worktree / "unsaved.txt").exists()
    assert len(after[2]) == len(before[2]) + 1  # the teammate's cancel: none written here

    # Again: a refresh, a replay, and a sync that brings the task in once more (the
    # teammate wrote to it again) find nothing more to do here.
    world.ok("tasks", "refresh", str(team.checkout))
    world.ok("task", "list")  # replays what is new on the ref
    team.teammate("task", "edit", cancelled, "--section", "Notes", "--file", "-", stdin="why\n")
    team.teammate("sync")
    synced = json.loads(world.ok("sync", "--json").out)
    assert cancelled in synced["incoming"] and synced["local"] == []
    again = _effects(world, cancelled)
    assert (again[0], again[1], again[3]) == (after[0], after[1], after[3])

    # A take changes no status line, only the host: the merge still ends it here.
    session = _effects(world, taken)[0]
    assert len(session) == 1
    team.teammate("task", "take", taken)
    team.teammate("sync")
    said = team.merge()
    assert f"orange: task {taken} taken by teammate: killed tmux session {session[0]}" in said
    assert _effects(world, taken)[0] == [] and _effects(world, taken)[3] == ""
    assert len(sessions_on(team.env["ORANGE_TMUX_SOCKET"])) == 1  # its agent runs there
