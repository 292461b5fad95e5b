"""`orange stats` on a generated history whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from orange import projects
from orange.errors import InvalidInput
from orange.ops.stats import collect
from orange.store.store import TaskStore
from tests.conftest import run_orange
from tests.ledger_history import START, Event, write

A, B, C = "aaaaaaa1", "bbbbbbb2", "ccccccc3"
TASKS = [
    (A, {"harness": "claude", "effort": "high", "summary": "Login form", "status": "done"}),
    (B, {"harness": "codex", "summary": "Search page", "status": "done"}),
    (C, {"harness": "claude", "effort": "high", "summary": "Dropped", "status": "cancelled"}),
]
HISTORY = [
    Event(0, A, "task.created"),
    Event(0, A, "status.changed", ("pending", "planning")),
    Event(100, A, "status.changed", ("planning", "working")),
    Event(
        1100, A, "status.changed", ("working", "agent-review"), (1000, 100, 0, "1.50", "m1", 1000)
    ),
    Event(1200, A, "status.changed", ("agent-review", "reviewing")),
    Event(1300, A, "status.changed", ("reviewing", "done")),
    Event(0, B, "task.created"),
    Event(0, B, "status.changed", ("pending", "planning")),
    Event(200, B, "status.changed", ("planning", "working")),
    Event(300, B, "agent.crashed"),
    Event(
        2200,
        B,
        "status.changed",
        ("working", "agent-review"),
        (2000, 200, 0, "unknown", "m2", 3600),
    ),
    Event(2300, B, "status.changed", ("agent-review", "working"), (10, 10, 0, "0.50", "m2", 0)),
    Event(3300, B, "status.changed", ("working", "agent-review")),
    Event(3400, B, "status.changed", ("agent-review", "reviewing")),
    Event(3500, B, "status.changed", ("reviewing", "done")),
    Event(0, C, "task.created"),
    Event(50, C, "status.changed", ("pending", "cancelled")),
    # An `orange run`'s architect, recorded on the run's record: no task of the stats.
    Event(3600, "run00001", "run.step", None, (100, 10, 0, "9.00", "m1", 600)),
]


@pytest.fixture
def store(repo: Path) -> TaskStore:
    write(pygit2.Repository(str(repo)), TASKS, HISTORY)
    return TaskStore.open(repo)


def test_the_known_answers(store: TaskStore) -> None:
    report = collect([("shop", store)]).report()
    assert report["tasks"] == {"started": 3, "done": 2, "cancelled": 1}
    assert report["reviews"] == {
        "claude/high": {"reviewed": 1, "first_pass_rate": 1.0, "mean_rounds": 1.0},
        "codex/-": {"reviewed": 1, "first_pass_rate": 0.0, "mean_rounds": 2.0},
    }
    assert report["crashes"] == {"count": 1, "agent_hours": 1.28, "per_agent_hour": 0.783}
    times = report["time_in_status"]
    assert times["planning"] == {"stays": 2, "median_s": 200, "p90_s": 200}
    assert times["working"] == {"stays": 3, "median_s": 1000, "p90_s": 2000}
    assert times["agent-review"]["stays"] == 3
    # B's cost is known only in part: its mean is unknown, never $0.50.
    assert report["done_by_harness"] == {
        "claude": {
            "tasks": 1,
            "cost_usd": "1.50",
            "cost_unknown": 0,
            "tokens": 1100,
            "unpriced_records": 0,
        },
        "codex": {
            "tasks": 1,
            "cost_usd": None,
            "cost_unknown": 1,
            "tokens": 2220,
            "unpriced_records": 1,
        },
    }
    assert set(report["done_by_model"]) == {"m1", "m2"}
    assert [t["id"] for t in report["most_expensive"]] == [A, B]


def test_since_and_harness_narrow_it(store: TaskStore) -> None:
    late = collect([("shop", store)], since=START + 1000).report()
    assert late["tasks"] == {"started": 0, "done": 2, "cancelled": 0}
    assert late["crashes"]["count"] == 0
    codex = collect([("shop", store)], harness="codex").report()
    assert codex["tasks"]["started"] == 1 and list(codex["done_by_harness"]) == ["codex"]


def test_a_harness_only_the_tasks_name_is_known_and_a_typo_is_refused(store: TaskStore) -> None:
    # A task that ran with a harness since removed from this host's configuration.
    retired = [*TASKS, ("ddddddd4", {"harness": "retired", "summary": "Old", "status": "done"})]
    write(store.pygit, retired, [*HISTORY, Event(10, "ddddddd4", "task.created")])
    with pytest.raises(InvalidInput) as refused:
        collect([("shop", store)], harness="claud")
    assert str(refused.value) == (
        "unknown harness 'claud' (known: claude, codex, demo, opencode, pi, retired)"
    )
    # Refused before the history is read: nothing walked, no cache written.
    assert not (store.repo.orange_dir() / "stats-cache.json").exists()
    assert collect([("shop", store)], harness="retired").report()["tasks"]["started"] == 1
    assert collect([("shop", store)], harness="pi").report()["tasks"]["started"] == 0


def test_a_warm_answer_reads_the_cache_and_new_commits_only(store: TaskStore) -> None:
    first = collect([("shop", store)]).report()
    cache = store.repo.orange_dir() / "stats-cache.json"
    assert json.loads(cache.read_text())["tip"] == str(
        store.pygit.references["refs/orange/tasks"].target
    )
    again = collect([("shop", store)]).report()
    assert again == first
    more = [*HISTORY, Event(4000, C, "agent.crashed")]
    write(store.pygit, TASKS, more)  # a rewritten history: not a descendant, walked again
    assert collect([("shop", store)]).report()["crashes"]["count"] == 2


def test_hostile_trailers_are_counted_as_claims_and_bounded(store: TaskStore) -> None:
    hostile = [
        *HISTORY,
        Event(5000, "../../etc", "status.changed", ("x", "y")),  # not a task id: skipped
        Event(5001, A, "status.changed", None, (10**20, 5, 5, "lots", "m" * 500, 10**20)),
    ]
    write(store.pygit, TASKS, hostile)
    report = collect([("shop", store)]).report()
    assert report["tasks"]["started"] == 3
    assert report["crashes"]["agent_hours"] == 1.28  # the huge figures read as 0


def test_the_command(repo: Path, store: TaskStore) -> None:
    projects.add(repo)
    result = run_orange("stats", "--json", cwd=repo)
    assert result.code == 0, result.err
    assert json.loads(result.out)["tasks"]["done"] == 2
    text = run_orange("stats", cwd=repo).out
    assert "tasks: 3 started, 2 done, 1 cancelled" in text
    bad = run_orange("stats", "--since", "last tuesday", cwd=repo)
    assert bad.code == 1 and "--since 'last tuesday' is neither a date nor an age" in bad.err
