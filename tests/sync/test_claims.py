"""Claims: on a project with a sync remote, a start first pushes its binding; a start
that lost to another host's claim starts nothing; an unreachable remote refuses the
start, and ``--offline`` starts without a claim.  (The two processes racing for one
task, with real agents: `tests/e2e/test_claims.py`.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orange import compose
from orange.store import layout
from orange.sync.claim import claim_on_remote
from tests.conftest import git
from tests.recording import Recorder, recording_registry
from tests.sync.conftest import Clone


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """The runtime's actions recorded (no worktree, no tmux); the claim real."""
    registry, recorded = recording_registry()
    parts = compose.Runtime(registry, None, None, claim=claim_on_remote)
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
