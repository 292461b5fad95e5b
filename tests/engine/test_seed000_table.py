"""Seed 000's transition table, row by row, through the engine (default workflow)."""

from __future__ import annotations

from itertools import product
from typing import NamedTuple

import pytest

from orange.errors import GateFailed, GuardFailed, IllegalTransition
from tests.engine.conftest import Env

STATUSES = ["pending", "planning", "clarification", "working", "agent-review", "reviewing",
            "stuck", "done", "cancelled"]  # fmt: skip

PLAN = "\n## Plan\n\nAPPROACH: small steps\nTOUCHING: src/app.py\n"
HANDOFF = "\n## Handoff\n\nDONE: the feature\n"
PASS = "\n## Review\n\nVerdict: PASS\n\nLooks good.\n"
FAIL = "\n## Review\n\n**Verdict: FAIL**\n\nMissing tests.\n"


class Row(NamedTuple):
    src: str
    dst: str
    body: str  # what satisfies the gate ("" = no gate)
    round: int  # review_round that satisfies the condition
    bad_round: int | None  # a review_round that breaks the condition, if any
    hooks: tuple[str, ...]  # runtime/core actions applied, in order


# Seed 000 "Transitions", with its gates, conditions and hooks, and the changes issue 10
# made (entering stuck notifies the worker; stuck -> working; a human's send-back starts
# a new review cycle) and issue 29 (every release starts the next queued task).
RELEASE = ("kill_session", "release_workspace", "spawn_next")
TABLE = [
    Row("pending", "planning", "", 0, None, ("acquire_workspace", "spawn_agent")),
    Row("pending", "cancelled", "", 0, None, ()),
    Row("planning", "working", PLAN, 0, None, ()),
    Row("planning", "clarification", "", 0, None, ()),
    Row("planning", "cancelled", "", 0, None, RELEASE),
    Row("clarification", "planning", "", 0, None, ()),
    Row("clarification", "cancelled", "", 0, None, RELEASE),
    Row("working", "agent-review", HANDOFF, 0, None, ("increment", "spawn_reviewer")),
    Row("working", "clarification", "", 0, None, ()),
    Row("working", "stuck", "", 0, None, ()),
    Row("working", "cancelled", "", 0, None, RELEASE),
    Row("agent-review", "reviewing", PASS, 1, None, ("kill_reviewer",)),
    Row("agent-review", "working", FAIL, 1, 2, ("kill_reviewer", "notify_worker")),
    Row("agent-review", "stuck", FAIL, 2, 1, ("kill_reviewer", "notify_worker")),
    Row("agent-review", "cancelled", "", 1, None,
        ("kill_reviewer", *RELEASE)),
    Row("reviewing", "working", "", 1, None, ("increment", "reset", "notify_worker")),
    Row("reviewing", "done", "", 1, None,
        ("kill_session", "release_workspace", "delete_remote_branch", "spawn_next")),
    Row("reviewing", "cancelled", "", 1, None, RELEASE),
    Row("stuck", "reviewing", "", 2, None, ()),
    Row("stuck", "working", "", 2, None, ("increment", "reset", "notify_worker")),
    Row("stuck", "cancelled", "", 2, None, RELEASE),
]  # fmt: skip
LISTED = {(r.src, r.dst) for r in TABLE}


@pytest.mark.parametrize("row", TABLE, ids=lambda r: f"{r.src}->{r.dst}")
def test_listed_move_succeeds_when_gate_and_condition_hold(env: Env, row: Row) -> None:
    task = env.make_task(row.src, body=row.body, review_round=row.round, crash_count=1)
    outcome = env.engine.transition(task.id, row.dst)
    after = env.get(task.id)
    assert after.status == row.dst
    assert after.int_field("crash_count") == 0
    assert outcome.hook_errors == []
    runtime = env.recorder.applied()
    assert [a for a in row.hooks if a not in ("increment", "reset")] == runtime
    if "reset" in row.hooks:  # a new review cycle: rounds count from 1 again
        assert after.int_field("review_round") == 0
        assert after.int_field("review_cycle") == 1
    elif "increment" in row.hooks:
        assert after.int_field("review_round") == row.round + 1


@pytest.mark.parametrize("row", [r for r in TABLE if r.body], ids=lambda r: f"{r.src}->{r.dst}")
def test_gated_move_fails_without_its_artifact(env: Env, row: Row) -> None:
    task = env.make_task(row.src, body="\n## Notes\n\nnothing yet\n", review_round=row.round)
    with pytest.raises(GateFailed):
        env.engine.transition(task.id, row.dst)
    assert env.get(task.id).status == row.src
    assert env.recorder.calls == []


@pytest.mark.parametrize("row", [r for r in TABLE if r.bad_round is not None],
                         ids=lambda r: f"{r.src}->{r.dst}")  # fmt: skip
def test_conditional_move_fails_when_condition_does_not_hold(env: Env, row: Row) -> None:
    task = env.make_task(row.src, body=row.body, review_round=row.bad_round)
    with pytest.raises(GuardFailed, match=f"review_round is {row.bad_round}"):
        env.engine.transition(task.id, row.dst)
    assert env.get(task.id).status == row.src


def test_wrong_verdict_fails_the_gate(env: Env) -> None:
    task = env.make_task("agent-review", body=FAIL, review_round=1)
    with pytest.raises(GateFailed, match="needs PASS"):
        env.engine.transition(task.id, "reviewing")


UNLISTED = [(a, b) for a, b in product(STATUSES, STATUSES) if (a, b) not in LISTED]


@pytest.mark.parametrize(("src", "dst"), UNLISTED, ids=lambda v: str(v))
def test_every_unlisted_pair_is_rejected(env: Env, src: str, dst: str) -> None:
    body = PLAN + HANDOFF + PASS
    task = env.make_task(src, body=body, review_round=1)
    with pytest.raises(IllegalTransition):
        env.engine.transition(task.id, dst)
    assert env.get(task.id).status == src


def test_illegal_transition_names_the_legal_targets(env: Env) -> None:
    task = env.make_task("planning")
    with pytest.raises(IllegalTransition) as info:
        env.engine.transition(task.id, "reviewing")
    assert "planning -> reviewing" in str(info.value)
    assert "working, clarification, cancelled" in str(info.value)


def test_stale_handoff_from_last_round_does_not_count(env: Env) -> None:
    task = env.make_task("working", body=HANDOFF)
    env.engine.transition(task.id, "agent-review")
    fail_body = env.get(task.id).body + FAIL
    _edit(env, task.id, fail_body)
    env.engine.transition(task.id, "working")
    with pytest.raises(GateFailed, match="stale"):
        env.engine.transition(task.id, "agent-review")
    _edit(env, task.id, env.get(task.id).body.replace("DONE: the feature", "DONE: fixed tests"))
    env.engine.transition(task.id, "agent-review")
    after = env.get(task.id)
    assert after.int_field("review_round") == 2
    # Last round's review is archived, readable, and no longer satisfies the gate.
    assert "## Review (round 1)" in after.body
    with pytest.raises(GateFailed, match='no "## Review" section'):
        env.engine.transition(task.id, "stuck")


def _edit(env: Env, task_id: str, body: str) -> None:
    from orange.engine.edits import edit_body

    edit_body(env.store, task_id, lambda _t: body, what="body")
