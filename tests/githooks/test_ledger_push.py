"""The ledger in a shared history: the hub takes the engine's usage records (totals that
add up to the trailers, the budget's stop) and refuses totals a commit does not
account for; a clone restores a forged total."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from orange.engine.engine import Engine
from orange.engine.forgery import verify_new
from orange.engine.ledger import Usage
from orange.engine.trust import trusted_here
from orange.store import layout
from orange.store.task import Task
from tests.githooks.test_forgery import engine, forge, planning_task, push, task_text, tip

__all__ = ["engine"]  # the fixture, used by name


class Spending:
    """The agent programs' side of the ledger (their session files) as one figure a
    call: the readers themselves are tested on real files in tests/runtime."""

    def __init__(self, *usages: Usage | None) -> None:
        self.usages = list(usages)

    def read(self, task: Task, since: str, until: str) -> Usage | None:
        return self.usages.pop(0) if self.usages else None


def spend(tokens: int, cost: str | None) -> Usage:
    return Usage(tokens, tokens // 10, tokens * 2, "claude-sonnet-4-5", _dollars(cost), 60)


def _dollars(cost: str | None) -> Decimal | None:
    return None if cost is None else Decimal(cost)


def test_usage_recorded_with_moves_is_taken_by_the_hub(
    engine: Engine, repo: Path, hub: Path
) -> None:
    task = planning_task(engine)
    engine.usage = Spending(spend(1000, "0.50"), spend(300, None))
    engine.transition(task.id, "clarification")
    moved = engine.transition(task.id, "planning")
    ledger = moved.task.fields
    assert ledger["tokens"] == {"in": 1300, "out": 130, "cache": 2600}
    assert ledger["cost_usd"] == "0.500000"  # the second record's cost is unknown
    assert ledger["cost_unknown"] is True  # so $0.50 is only part of it
    message = _message(repo)
    assert "Orange-Tokens-In: 300" in message and "Orange-Cost-USD: unknown" in message
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert tip(hub) == tip(repo)
    # A teammate's push that drops the mark, to make the partial sum read as complete:
    complete = Task.parse(task_text(repo, task.id), where="t").with_fields(cost_unknown=None)
    forge(repo, {layout.task_path(task.id): complete.render()}, "cost known")
    refused = push(repo)
    assert refused.returncode != 0
    assert "cost_unknown changed without a usage record" in refused.stderr


def test_costs_finer_than_a_millionth_add_up_as_their_trailers_say(
    engine: Engine, repo: Path, hub: Path
) -> None:
    # A price table gives costs to the tenth of a millionth (10 input tokens at $3 a
    # million and 5 cache reads at $0.30: $0.0000315).  The totals must be the sum of
    # the trailers as written, or Orange's own records would read as forged.
    task = planning_task(engine)
    engine.usage = Spending(spend(1000, "0.060127"), spend(1000, "0.0150315"))
    engine.transition(task.id, "clarification")
    moved = engine.transition(task.id, "planning")
    assert "Orange-Cost-USD: 0.015032" in _message(repo)
    assert moved.task.fields["cost_usd"] == "0.075159"  # 0.060127 + 0.015032
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert verify_new(engine.store, trusted=trusted_here, actor="monitor").restored == []


def test_totals_that_do_not_add_up_are_refused(engine: Engine, repo: Path, hub: Path) -> None:
    task = planning_task(engine)
    engine.usage = Spending(spend(1000, "0.50"))
    engine.transition(task.id, "clarification")
    assert push(repo).returncode == 0
    landed = tip(hub)
    now = Task.parse(task_text(repo, task.id), where="t")
    bigger = now.with_fields(tokens={"in": 9000, "out": 100, "cache": 2000}, cost_usd="0.600000")
    trailers = (
        f"Orange-Task: {task.id}\nOrange-Event: task.updated\nOrange-Tokens-In: 10\n"
        "Orange-Tokens-Out: 0\nOrange-Tokens-Cache: 0\nOrange-Model: x\n"
        "Orange-Cost-USD: 0.10\nOrange-Agent-Seconds: 1\n"
    )
    forge(repo, {layout.task_path(task.id): bigger.render()}, f"usage\n\n{trailers}")
    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: tokens is " in result.stderr
    assert "the usage record of this commit makes it" in result.stderr
    assert tip(hub) == landed
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert len(found.restored) == 1
    restored = Task.parse(task_text(repo, task.id), where="restored")
    assert restored.fields["tokens"] == now.fields["tokens"]
    assert restored.fields["cost_usd"] == "0.500000"


def test_the_budget_stop_is_taken_by_the_hub(engine: Engine, repo: Path, hub: Path) -> None:
    task = planning_task(engine)
    engine.store.commit(_budget(task.id, "1.00"))
    engine.usage = Spending(spend(1000, "0.80"), spend(1000, "0.40"))
    engine.transition(task.id, "clarification")
    engine.transition(task.id, "planning")  # the record passes the budget: stopped at once
    stopped = engine.store.get(task.id)
    assert stopped.status == "stuck"
    assert stopped.fields["attention"] == "budget of $1.00 spent ($1.20)"
    assert stopped.fields["cost_usd"] == "1.200000"
    result = push(repo)
    assert result.returncode == 0, result.stderr


def test_a_live_agent_past_its_budget_is_stopped(engine: Engine, repo: Path, hub: Path) -> None:
    task = planning_task(engine)
    engine.store.commit(_budget(task.id, "1.00"))
    # Read at each move, at the live look and again by the stop that records it.
    engine.usage = Spending(spend(1000, "0.40"), None, spend(1000, "0.70"), spend(1000, "0.70"))
    engine.transition(task.id, "clarification")
    engine.transition(task.id, "planning")
    assert engine.enforce_budget(task.id) is None  # recorded $0.40; not live
    stopped = engine.enforce_budget(task.id, live=True)
    assert stopped is not None
    assert stopped.task.status == "stuck"
    assert stopped.task.fields["attention"] == "budget of $1.00 spent ($1.10)"
    assert stopped.task.fields["cost_usd"] == "1.100000"
    result = push(repo)
    assert result.returncode == 0, result.stderr


def _budget(task_id: str, dollars: str):  # type: ignore[no-untyped-def]
    from orange.engine.records import fields_change, require

    return lambda snap: fields_change(
        require(snap, task_id), {"budget_usd": dollars}, "task.updated", "budget", "cli"
    )


def _message(repo: Path) -> str:
    import subprocess

    return subprocess.run(
        ["git", "log", "-1", "--format=%B", layout.TASKS_REF],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
