"""A forced move of the tasks ref (a user's ``+`` refspec, ``git update-ref``) to a
commit that does not hold the verified tip is noticed, said in one line and undone:
the commits it left stay on the ref, what it was moved to stays reachable
(`orange.store.rewind`, `orange.engine.forgery.verify_new`)."""

from __future__ import annotations

from pathlib import Path

from orange.engine.engine import Engine
from orange.engine.forgery import recorded, take_back, verify_new
from orange.engine.trust import trusted_here
from orange.store import layout
from tests.conftest import git
from tests.githooks.test_forgery import PUSH, engine, planning_task, push, tip

__all__ = ["engine"]  # the fixture, used by name


def test_a_rewind_to_an_older_commit_is_put_back(engine: Engine, repo: Path) -> None:
    task = planning_task(engine)
    older = tip(repo)
    engine.set_fields(task.id, {"summary": "verified"}, "task.updated", "summary")
    verify_new(engine.store, trusted=trusted_here, actor="monitor")
    engine.set_fields(task.id, {"summary": "mine, not verified yet"}, "task.updated", "summary")
    mine = tip(repo)
    git(repo, "update-ref", layout.TASKS_REF, older)

    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert tip(repo) == mine  # the newest good tip, not only the verified one
    assert engine.store.get(task.id).summary == "mine, not verified yet"
    kept = f"refs/orange/rewound/{older}"
    assert git(repo, "rev-parse", kept).strip() == older
    lines = found.lines()
    assert len(lines) == 1 and f"put back at {mine[:10]}" in lines[0], lines
    assert kept in lines[0]
    assert recorded(engine.store) == mine


def test_a_forced_fetch_of_another_history_is_put_back(
    engine: Engine, repo: Path, hub: Path
) -> None:
    """The hub's history has none of this clone's unpushed commits; a fetch with a
    ``+`` refspec into the tasks ref would drop them."""
    planning_task(engine)
    assert push(repo).returncode == 0
    task = planning_task(engine)  # not pushed
    verify_new(engine.store, trusted=trusted_here, actor="sync")
    mine = tip(repo)
    git(repo, "fetch", "-q", "hub", f"+{PUSH}")
    fetched = tip(hub)
    assert tip(repo) == fetched

    found = verify_new(engine.store, trusted=trusted_here, actor="sync")
    assert tip(repo) == mine
    assert engine.store.get(task.id).status == "planning"
    assert git(repo, "rev-parse", f"refs/orange/rewound/{fetched}").strip() == fetched
    assert "does not hold the verified" in (found.warning() or "")


def test_orange_s_own_take_back_of_a_verified_commit_stays_taken_back(
    engine: Engine, repo: Path
) -> None:
    """A start whose claim could not be pushed takes its commit back
    (`orange.sync.claim`); a monitor pass may have verified that commit meanwhile.  The
    take-back is Orange's own move: it is not put back."""
    task = planning_task(engine)
    before = tip(repo)
    engine.set_fields(task.id, {"summary": "a claim"}, "task.updated", "summary")
    claim = tip(repo)
    verify_new(engine.store, trusted=trusted_here, actor="monitor")  # a pass meanwhile
    assert recorded(engine.store) == claim
    assert take_back(engine.store, claim)

    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert tip(repo) == before
    assert engine.store.get(task.id).summary != "a claim"
    assert found.lines() == []
    assert not git(repo, "for-each-ref", "refs/orange/rewound").strip()
