"""Claims: on a project with a sync remote, a start first pushes its binding; a start
that lost to another host's claim starts nothing; an unreachable remote refuses the
start, and ``--offline`` starts without a claim.  (The two processes racing for one
task, with real agents: `tests/e2e/test_claims.py`.)"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from orange import compose
from orange.store import layout
from orange.sync.claim import claim_on_remote, share_branch
from tests.conftest import git
from tests.recording import Recorder, recording_registry
from tests.sync.conftest import Clone


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """The runtime's actions recorded (no worktree, no tmux); the claim and the
    branch push real."""
    registry, recorded = recording_registry()
    claim = partial(claim_on_remote, tmux=compose.tmux)
    parts = compose.Runtime(registry, None, None, claim=claim, share=share_branch)
    monkeypatch.setattr(compose, "runtime", lambda: parts)
    return recorded


def test_a_start_pushes_its_claim_and_a_later_claim_starts_nothing(
    clones: Callable[[int], list[Clone]], hub: Path, recorder: Recorder
) -> None:
    a, b = clones(2)
    task_id = a.create("one runner")
    a.ok("sync")
    b.ok("sync")
    a.ok("task", "update", task_id, "--status", "planning")
    assert git(hub, "rev-parse", layout.TASKS_REF) == git(a.path, "rev-parse", layout.TASKS_REF)
    assert "spawn_agent" in recorder.applied()
    recorder.clear()

    lost = b.ok("task", "update", task_id, "--status", "planning", "--json").json()
    assert recorder.applied() == []  # prepared (the worktree taken), never carried out
    assert f"task {task_id} not started here: it is running on host0" in lost["messages"][0]
    assert (lost["host"], lost["status"]) == ("host0", "planning")
    shown = b.ok("task", "show", task_id, "--json").json()
    assert shown["running_on"] == "host0"


def test_an_unreachable_remote_refuses_the_start_and_offline_starts(
    clones: Callable[[int], list[Clone]], tmp_path: Path, recorder: Recorder
) -> None:
    (a,) = clones(1)
    task_id = a.create("no network")
    a.ok("sync")
    before = git(a.path, "rev-parse", layout.TASKS_REF)
    git(a.path, "remote", "set-url", "origin", str(tmp_path / "gone.git"))

    refused = a("task", "update", task_id, "--status", "planning")
    assert refused.code == 1
    assert f"task {task_id} not started: cannot claim it on origin" in refused.err
    assert "--offline" in refused.err
    assert git(a.path, "rev-parse", layout.TASKS_REF) == before  # the move taken back
    assert recorder.applied() == []

    started = a.ok("task", "update", task_id, "--status", "planning", "--offline", "--json")
    assert (started.json()["status"], started.json()["host"]) == ("planning", "host0")
    assert "spawn_agent" in recorder.applied()


def test_a_task_that_waits_for_a_human_has_its_branch_pushed_never_forced(
    clones: Callable[[int], list[Clone]], hub: Path, recorder: Recorder
) -> None:
    (a,) = clones(1)
    shared, diverged = a.create("shared"), a.create("diverged")
    branches = {}
    for task_id in (shared, diverged):
        a.ok("task", "update", task_id, "--status", "planning")
        branches[task_id] = a.ok("task", "show", task_id, "--json").json()["branch"]
        git(a.path, "branch", branches[task_id], "main")
    other = git(a.path, "commit-tree", "-m", "a teammate's", "main^{tree}").strip()
    git(a.path, "push", "-q", "origin", f"{other}:refs/heads/{branches[diverged]}")

    moved = a.ok("task", "update", shared, "--status", "clarification", "--json").json()
    assert moved["messages"] == []
    pushed = git(hub, "rev-parse", f"refs/heads/{branches[shared]}").strip()
    assert pushed == git(a.path, "rev-parse", "main").strip()

    kept = a.ok("task", "update", diverged, "--status", "clarification", "--json").json()
    assert kept["status"] == "clarification"  # a failed push is a warning, never a failed move
    assert (
        f"warning: branch {branches[diverged]} of task {diverged} not pushed" in kept["messages"][0]
    )
    assert git(hub, "rev-parse", f"refs/heads/{branches[diverged]}").strip() == other


def test_take_moves_a_task_from_a_gone_host_here_and_fetches_its_branch(
    clones: Callable[[int], list[Clone]], recorder: Recorder
) -> None:
    a, b = clones(2)
    pushed, never = a.create("its branch was pushed"), a.create("its branch never was")
    for task_id in (pushed, never):
        a.ok("task", "update", task_id, "--status", "planning")
    branch = a.ok("task", "show", pushed, "--json").json()["branch"]
    work = git(a.path, "commit-tree", "-m", "work on host0", "main^{tree}").strip()
    git(a.path, "push", "-q", "origin", f"{work}:refs/heads/{branch}")
    b.ok("sync")

    mine = a("task", "take", pushed)
    assert mine.code == 1 and f"task {pushed} is not bound to another host" in mine.err
    recorder.clear()
    taken = b.ok("task", "take", pushed, "--json").json()
    assert (taken["host"], taken["status"]) == ("host1", "planning")
    assert taken["messages"][0] == f"task {pushed} taken over from host0"
    assert not any("warning" in line for line in taken["messages"])
    assert "spawn_agent" in recorder.applied()
    assert git(b.path, "rev-parse", f"refs/heads/{branch}").strip() == work
    warned = b.ok("task", "take", never)
    assert "was never pushed to origin" in warned.out
    a.ok("sync")  # the hub's checker accepted both takes; host0 sees where they run
    assert a.ok("task", "show", pushed, "--json").json()["running_on"] == "host1"


def test_the_claim_bound_is_claim_timeout_in_the_config(
    clones: Callable[[int], list[Clone]], recorder: Recorder
) -> None:
    (a,) = clones(1)
    task_id = a.create("a slow remote")
    a.ok("sync")
    before = git(a.path, "rev-parse", layout.TASKS_REF)
    config = a.path.parent / f"home-{a.host}" / "config.yml"
    config.write_text("claim_timeout: 0.000001\n")  # spent before the fetch starts
    spent = a("task", "update", task_id, "--status", "planning")
    assert spent.code == 1 and "the remote did not answer in time" in spent.err
    config.write_text("claim_timeout: soon\n")
    wrong = a("task", "update", task_id, "--status", "planning")
    assert wrong.code == 1 and len(wrong.err.strip().splitlines()) == 1
    assert "claim_timeout must be a number of seconds above 0, not 'soon'" in wrong.err
    assert "fix or remove claim_timeout" in wrong.err
    assert git(a.path, "rev-parse", layout.TASKS_REF) == before  # both moves taken back
    assert recorder.applied() == []
    config.write_text("claim_timeout: 60\n")
    a.ok("task", "update", task_id, "--status", "planning")
    assert "spawn_agent" in recorder.applied()
