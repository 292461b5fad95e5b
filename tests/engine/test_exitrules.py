"""Dead-session decisions of the shipped workflows, as seed 000 "Auto-Advance Rules" says."""

from __future__ import annotations

from importlib.resources import files
from typing import NamedTuple

import pytest

from orange.engine.exitrules import (
    Advance,
    Crash,
    DeadSessionDecision,
    MarkDead,
    Respawn,
    decide_dead_session,
)
from orange.engine.gates import fingerprints
from orange.engine.loader import load_workflow
from orange.engine.workflow import Workflow


def shipped(name: str) -> Workflow:
    text = (files("orange._workflows") / f"{name}.yml").read_text()
    return load_workflow(text, f"{name}.yml")


DEFAULT = shipped("default")

PLAN = "## Plan\nAPPROACH: split the parser\nTOUCHING: parser.py\n"
HANDOFF = "## Handoff\nDONE: parser split\n"
PASS = "## Review\nVerdict: PASS\nfine\n"
FAIL = "## Review\n**Verdict: FAIL**\nbroken test\n"


class Case(NamedTuple):
    id: str
    status: str
    body: str
    fields: dict[str, object]
    expected: type
    to: str | None = None  # Advance target, or escalation target of Crash/Respawn


CASES = [
    Case("planning, plan -> working", "planning", PLAN, {}, Advance, "working"),
    Case("planning, no plan -> crash 1", "planning", "## Notes\nhm\n", {}, Crash, None),
    Case(
        "planning, no plan, 2nd crash -> stuck", "planning", "", {"crash_count": 1}, Crash, "stuck"
    ),
    Case("planning, plan without fields -> crash", "planning", "## Plan\nsoon\n", {}, Crash, None),
    Case("working, handoff -> agent-review", "working", HANDOFF, {}, Advance, "agent-review"),
    Case("working, no handoff -> crash 1", "working", PLAN, {"crash_count": 0}, Crash, None),
    Case("working, 2nd crash -> stuck", "working", PLAN, {"crash_count": "1"}, Crash, "stuck"),
    Case("agent-review, PASS -> reviewing", "agent-review", PASS, {}, Advance, "reviewing"),
    Case(
        "agent-review, FAIL round 1 -> working",
        "agent-review",
        FAIL,
        {"review_round": 1},
        Advance,
        "working",
    ),
    Case(
        "agent-review, FAIL round 2 -> stuck",
        "agent-review",
        FAIL,
        {"review_round": 2},
        Advance,
        "stuck",
    ),
    Case("agent-review, no verdict -> respawn", "agent-review", HANDOFF, {}, Respawn, None),
    Case(
        "agent-review, no verdict 2nd crash -> stuck",
        "agent-review",
        "## Review\nhalf written\n",
        {"crash_count": 1},
        Respawn,
        "stuck",
    ),
    Case("clarification -> mark dead", "clarification", PLAN, {}, MarkDead),
    Case("reviewing -> mark dead", "reviewing", PASS, {}, MarkDead),
    Case("stuck -> mark dead", "stuck", HANDOFF, {}, MarkDead),
    Case("pending has no rule -> mark dead", "pending", "", {}, MarkDead),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_default_rules(case: Case) -> None:
    decision = decide_dead_session(DEFAULT, {"status": case.status, **case.fields}, case.body, {})
    assert type(decision) is case.expected, decision
    if isinstance(decision, Advance):
        assert decision.to == case.to
    if isinstance(decision, Crash | Respawn):
        assert decision.escalate_to == case.to


def test_crash_counts_up_from_frontmatter() -> None:
    first = decide_dead_session(DEFAULT, {"status": "working"}, "", {})
    assert first == Crash(1, 2, None, "no valid artifact, crash 1")
    second = decide_dead_session(DEFAULT, {"status": "working", "crash_count": 1}, "", {})
    assert isinstance(second, Crash)
    assert (second.crash_count, second.escalate_to) == (2, "stuck")


def test_respawn_counts_a_crash() -> None:
    decision = decide_dead_session(DEFAULT, {"status": "agent-review", "crash_count": 0}, "", {})
    assert decision == Respawn(True, 1, 2, None, "no valid artifact, crash 1")


def test_stale_artifact_counts_as_no_artifact() -> None:
    body = PLAN + "\n" + HANDOFF
    baseline = fingerprints(body, DEFAULT.gated_sections("working"))
    decision = decide_dead_session(DEFAULT, {"status": "working"}, body, baseline)
    assert isinstance(decision, Crash)
    rewritten = body.replace("parser split", "parser split and tested")
    after = decide_dead_session(DEFAULT, {"status": "working"}, rewritten, baseline)
    assert after == Advance("agent-review", "## Handoff present")


def test_stale_review_is_not_a_verdict() -> None:
    baseline = fingerprints(FAIL, DEFAULT.gated_sections("agent-review"))
    decision = decide_dead_session(DEFAULT, {"status": "agent-review"}, FAIL, baseline)
    assert isinstance(decision, Respawn)


def test_has_artifact_rules_win_in_order() -> None:
    decision: DeadSessionDecision = decide_dead_session(
        DEFAULT, {"status": "agent-review", "review_round": 1}, FAIL, {}
    )
    assert decision == Advance("working", "## Review verdict FAIL, review_round < 2")


def test_other_shipped_workflows() -> None:
    minimal = shipped("minimal")
    assert decide_dead_session(minimal, {"status": "working"}, HANDOFF, {}) == Advance(
        "reviewing", "## Handoff present"
    )
    assert isinstance(decide_dead_session(minimal, {"status": "reviewing"}, "", {}), MarkDead)
    fresh = shipped("fresh-worker")
    crash = decide_dead_session(fresh, {"status": "agent-review", "crash_count": 1}, "", {})
    assert isinstance(crash, Crash)
    assert crash.escalate_to == "stuck"
    review = shipped("self-review")  # the outcome is its artifact (seed 003), not a handoff
    outcome = "## Outcome\nOUTCOME: passed\n"
    assert decide_dead_session(review, {"status": "working"}, outcome, {}) == Advance(
        "reviewing", "## Outcome present"
    )
    assert isinstance(decide_dead_session(review, {"status": "working"}, HANDOFF, {}), Crash)
