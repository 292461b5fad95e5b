"""The pull request Orange opens says what the task cost, from its ledger."""

from __future__ import annotations

from pathlib import Path

from orange.store.events import Change
from orange.store.store import Snapshot
from tests.e2e.conftest import World, commit_behind_engine
from tests.e2e.test_runtime_cmds import HANDOFF, Gh, add_origin, commit_on, gh

__all__ = ["gh"]  # the fixture, used by name


def test_the_pr_body_ends_with_the_cost(world: World, tmp_path: Path, gh: Gh) -> None:
    add_origin(world, tmp_path)
    commit_on(world.repo, "pr-cost", "x.txt", "x\n")
    task = world.create("pr-cost", "Make the widget red", "--status", "reviewing")
    world.ok("task", "edit", task, "--section", "Handoff", "--file", "-", stdin=HANDOFF)

    def spent(snap: Snapshot) -> Change:  # a record as the engine writes it, set up here
        now = snap.task(task)
        assert now is not None
        ledger = {
            "tokens": {"in": 12000, "out": 800, "cache": 90000},
            "cost_usd": "1.234500",
            "usage_through": "2026-11-27T10:00:00.000Z",
        }
        new = now.with_fields(**ledger)
        return Change(
            task_id=task, event="usage", subject="usage", writes={now.path: new.render().encode()}
        )

    commit_behind_engine(world.repo, spent)
    world.ok("task", "create-pr", task)
    create = next(c for c in gh.calls() if c[:2] == ["pr", "create"])
    body = create[create.index("--body") + 1]
    assert body.startswith(HANDOFF.strip())
    assert body.endswith("Cost (Orange's ledger): $1.23; tokens 12,000 in, 800 out, 90,000 cache")
