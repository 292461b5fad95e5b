"""What `orange run` cost: each invocation's usage, as the agent program printed it,
recorded on the subtask's task (its SWE's and its review's) or on the run's record (the
architect's); `run show` per subtask and in total; `--budget` stops the run before an
agent would start past it, and `run resume --budget` goes on."""

from __future__ import annotations

import os
import sys

import pytest

from orange.engine.replay import check_history
from orange.engine.trust import trusted_here
from orange.store import runfile
from orange.store.store import TaskStore
from tests.conftest import git
from tests.githooks.test_forgery import forge
from tests.run.conftest import FAKES, RunWorld, plan

CALL = "0.020650"  # Claude Code's own cost of one call (tests/fixtures/usage/claude/print.json)


@pytest.fixture
def claude(world: RunWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """`claude` on PATH: the scripted agent in `claude -p --output-format json`'s object."""
    folder = world.tmp / "claude-bin"
    folder.mkdir()
    script = folder / "claude"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKES / "claude_print.py"}" "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_a_run_records_what_its_agents_cost_and_stops_at_its_budget(
    world: RunWorld, claude: None
) -> None:
    world.scenario(plan=[plan([["a"]])], edits={"Title a": {"a.txt": "made by a"}})
    args = ("--skip-clarification", "--no-pr", "--architect", "claude", "--swe", "claude")
    bad = world.run("add a", *args, "--budget", "lots")
    assert bad.code == 1 and "budget 'lots' is not an amount of dollars" in bad.err
    assert world.run("list").out.strip() == "no runs"

    # The plan ($0.02065), the SWE's work and its tests ($0.0413): the review would start
    # at $0.06195, past $0.05.
    stopped = world.run("add a", *args, "--budget", "0.05", "--json")
    assert stopped.code == 1, stopped.err
    run = stopped.json()["run"]
    assert run["status"] == "failed"
    assert run["error"] == "budget of $0.05 spent ($0.06)"
    assert [c[0] for c in world.calls()] == ["plan", "implement", "tests"]
    shown = world.run("show", run["id"], "--json").json()["run"]
    assert shown["cost_usd"] == "0.061950" and shown["budget_usd"] == "0.05"
    assert shown["architect_usage"]["cost_usd"] == CALL
    assert shown["subtasks"][0]["cost_usd"] == "0.041300"
    # Claude Code's modelUsage: 2,400 in, 160 out, 1,800 + 600 cache a call.
    assert shown["tokens"] == {"in": 7200, "out": 480, "cache": 7200}
    text = world.run("show", run["id"]).out
    assert "cost $0.06/0.05 (tokens 7,200 in, 480 out, 7,200 cache); the architect $0.02" in text
    assert "$0.04, task" in text
    assert f"{run['id']}  failed" in world.run("list").out and "$0.06/0.05" in world.run("list").out
    again = world.run("resume", run["id"])
    assert again.code == 1 and "budget of $0.05 spent" in again.err
    assert f"orange run resume {run['id']} --budget DOLLARS" in again.err
    assert len(world.calls()) == 3  # no agent started

    done = world.run("resume", run["id"], "--budget", "1", "--json")
    assert done.code == 0, done.err
    final = done.json()["run"]
    assert final["status"] == "completed" and final["budget_usd"] == "1.00"
    # The review's iteration again from its start: three more calls.
    assert final["cost_usd"] == "0.123900"
    # Every record is one the hub takes: totals that add up to their trailers.
    store = TaskStore.open(world.repo)
    tip = str(store.pygit.references["refs/orange/tasks"].target)
    assert check_history(store.pygit, tip, None, trusted=trusted_here) == []
    # A teammate's push that makes the run cheaper (to pass its budget) is refused.
    record = runfile.load(
        git(world.repo, "show", f"{tip}:{runfile.run_path(run['id'])}").encode(), run["id"]
    )
    record.fields["cost_usd"] = "0.000001"
    forge(world.repo, {runfile.run_path(run["id"]): record.render()}, "cheaper")
    forged = str(store.pygit.references["refs/orange/tasks"].target)
    found = check_history(store.pygit, forged, tip, trusted=trusted_here)
    assert [v.reason for v in found] == [
        "cost_usd changed without a usage record (Orange-Tokens-*)"
    ]
