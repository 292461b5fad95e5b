"""`Engine.handle_dead_session` (exit monitoring) with the recording registry, for the
default, minimal and self-review workflows; and its idempotency."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, NamedTuple

import pytest

from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.ledger import Usage
from orange.engine.monitoring import handle_dead_session
from orange.engine.replay import check_history
from orange.engine.trust import trusting
from orange.store import layout
from orange.store.history import task_history
from orange.store.task import Task
from tests.conftest import git
from tests.engine.conftest import Env

PLAN = "\n## Plan\n\nAPPROACH: small steps\nTOUCHING: src/app.py\n"
HANDOFF = "\n## Handoff\n\nDONE: the feature\n"
PASS = "\n## Review\n\nVerdict: PASS\n\nLooks good.\n"
FAIL = "\n## Review\n\nVerdict: FAIL\n\nMissing tests.\n"
NOTES = "\n## Notes\n\nstill thinking\n"
OUTCOME = "\n## Outcome\n\nOUTCOME: passed\n"


def tip(env: Env) -> str:
    return git(env.repo, "rev-parse", layout.TASKS_REF).strip()


def applied(env: Env) -> list[tuple[str, Any]]:
    """Applied runtime actions with their prompt (or message) parameter."""
    return [
        (c.action, c.params.get("prompt") or c.params.get("message"))
        for c in env.recorder.calls
        if c.phase == "apply"
    ]


class Death(NamedTuple):
    workflow: str
    status: str  # where the agent died
    body: str
    round: int
    to: str  # status afterwards
    crash_count: int  # afterwards
    attention: bool  # a human is asked to look
    actions: list[tuple[str, Any]]  # runtime actions applied
    says: str  # in handle_dead_session's answer


DEATHS = [
    # default (seed 000 "Auto-Advance Rules")
    Death("default", "planning", PLAN, 0, "working", 0, False, [], "advanced planning -> working"),
    Death("default", "planning", NOTES, 0, "planning", 1, True, [], "marked dead"),
    Death("default", "working", HANDOFF, 0, "agent-review", 0, False,
          [("spawn_reviewer", "reviewer")], "advanced working -> agent-review"),
    Death("default", "working", NOTES, 0, "working", 1, True, [], "marked dead"),
    Death("default", "agent-review", PASS, 1, "reviewing", 0, False, [("kill_reviewer", None)],
          "advanced agent-review -> reviewing"),
    Death("default", "agent-review", FAIL, 1, "working", 0, False,
          [("kill_reviewer", None), ("notify_worker", "review_failed")],
          "advanced agent-review -> working"),
    # entering stuck tells the worker (issue 10): the stuck_fix message, or its respawn
    Death("default", "agent-review", FAIL, 2, "stuck", 0, False,
          [("kill_reviewer", None), ("notify_worker", "stuck_fix")],
          "advanced agent-review -> stuck"),
    Death("default", "agent-review", NOTES, 1, "agent-review", 1, False,
          [("spawn_reviewer", "reviewer")], "respawned the agent of agent-review"),
    Death("default", "clarification", NOTES, 0, "clarification", 0, True, [], "marked dead"),
    Death("default", "reviewing", HANDOFF + PASS, 1, "reviewing", 0, True, [], "marked dead"),
    Death("default", "stuck", FAIL, 2, "stuck", 0, True, [], "marked dead"),
    # minimal (seed 001 example)
    Death("minimal", "working", HANDOFF, 0, "reviewing", 0, False, [("kill_session", None)],
          "advanced working -> reviewing"),
    Death("minimal", "working", NOTES, 0, "working", 1, True, [], "marked dead"),
    Death("minimal", "reviewing", HANDOFF, 0, "reviewing", 0, True, [], "marked dead"),
    # self-review (seed 003): a recorded outcome without the move completes it; the
    # outcome is the artifact, a handoff alone is not
    Death("self-review", "working", OUTCOME, 0, "reviewing", 0, False, [],
          "advanced working -> reviewing"),
    Death("self-review", "working", HANDOFF, 0, "working", 1, True, [], "marked dead"),
    Death("self-review", "working", NOTES, 0, "working", 1, True, [], "marked dead"),
]  # fmt: skip


def death_id(d: Death) -> str:
    artifact = {
        PLAN: "plan",
        HANDOFF: "handoff",
        OUTCOME: "outcome",
        PASS: "pass",
        FAIL: "fail",
        NOTES: "nothing",
    }
    what = artifact.get(d.body, "handoff+pass")
    return f"{d.workflow}-{d.status}-{what}-round{d.round}"


@pytest.mark.parametrize("death", DEATHS, ids=death_id)
def test_dead_agent_is_handled_by_the_exit_rules(env: Env, death: Death) -> None:
    task = env.make_task(
        death.status, body=death.body, workflow=death.workflow, review_round=death.round,
        agent_run="run-1",
    )  # fmt: skip
    said = handle_dead_session(env.engine, task.id, expect_status=death.status)
    assert death.says in said
    after = env.get(task.id)
    assert after.status == death.to
    assert after.int_field("crash_count") == death.crash_count
    attention = after.str_field("attention")
    assert bool(attention) == death.attention, attention
    if death.attention:  # the hint names a command that works in the status
        respawns = load_named(death.workflow).states[death.status].respawn_prompt is not None
        assert (f"orange task respawn {task.id}" in attention) == respawns, attention
    assert applied(env) == death.actions


# A reviewer respawned after a death is a new run, indistinguishable (without a probe)
# from one that died again: that case is the race test at the end.
ONCE = [d for d in DEATHS if not d.says.startswith("respawned")]


@pytest.mark.parametrize("death", ONCE, ids=death_id)
def test_handling_the_same_death_twice_does_nothing_the_second_time(env: Env, death: Death) -> None:
    task = env.make_task(
        death.status, body=death.body, workflow=death.workflow, review_round=death.round,
        agent_run="run-1",
    )  # fmt: skip
    handle_dead_session(env.engine, task.id, expect_status=death.status)
    before = tip(env)
    env.recorder.clear()
    assert handle_dead_session(env.engine, task.id, expect_status=death.status) == "nothing to do"
    assert tip(env) == before
    assert env.recorder.calls == []


@pytest.mark.parametrize("status", ["clarification", "reviewing", "stuck", "working"])
def test_a_death_marked_once_is_not_marked_again_without_expect_status(
    env: Env, status: str
) -> None:
    task = env.make_task(status, body=NOTES, review_round=1, agent_run="run-1")
    handle_dead_session(env.engine, task.id)
    before = tip(env)
    assert handle_dead_session(env.engine, task.id) == "nothing to do"
    assert tip(env) == before
    assert env.get(task.id).int_field("crash_count") == (1 if status == "working" else 0)


def test_a_task_that_moved_meanwhile_is_left_alone(env: Env) -> None:
    task = env.make_task("working", body=NOTES, agent_run="run-1")
    before = tip(env)
    assert handle_dead_session(env.engine, task.id, expect_status="planning") == "nothing to do"
    assert tip(env) == before


@pytest.mark.parametrize("status", ["done", "cancelled"])
def test_terminal_tasks_are_never_touched(env: Env, status: str) -> None:
    task = env.make_task(status, agent_run="run-1")
    before = tip(env)
    assert handle_dead_session(env.engine, task.id) == "nothing to do"
    assert tip(env) == before


@pytest.mark.parametrize("workflow", ["default", "minimal", "self-review"])
def test_worker_crashing_twice_escalates_to_stuck(env: Env, workflow: str) -> None:
    task = env.make_task("working", body=NOTES, workflow=workflow, agent_run="run-1")
    handle_dead_session(env.engine, task.id, expect_status="working")
    first = env.get(task.id)
    assert (first.status, first.int_field("crash_count")) == ("working", 1)
    assert first.str_field("attention")

    env.recorder.clear()
    env.engine.respawn(task.id)
    respawned = env.get(task.id)
    assert respawned.str_field("agent_run") not in ("", "run-1")
    assert respawned.int_field("crash_count") == 1  # a respawn is not a success
    assert respawned.str_field("attention") == ""
    assert [c.action for c in env.recorder.calls if c.phase == "apply"] == ["spawn_agent"]

    env.recorder.clear()
    said = handle_dead_session(env.engine, task.id, expect_status="working")
    assert said.startswith("escalated working -> stuck")
    stuck = env.get(task.id)
    assert stuck.status == "stuck"
    assert stuck.int_field("crash_count") == 0  # reset by the move
    assert stuck.str_field("attention") == ""
    escalation = task_history(env.store, task.id)[-1]
    assert (escalation.event, escalation.actor) == ("status.changed", "monitor")
    if workflow == "minimal":  # no working -> stuck transition: the monitor-only move
        assert escalation.trailers.get("Orange-Escalation") == "yes"
    assert [h.event for h in task_history(env.store, task.id)][-4:] == [
        "agent.crashed",
        "agent.respawned",
        "agent.crashed",
        "status.changed",
    ]


def test_reviewer_dying_twice_without_verdict_escalates_to_stuck(env: Env) -> None:
    task = env.make_task("agent-review", body=HANDOFF, review_round=1, agent_run="run-1")
    assert "respawned" in handle_dead_session(env.engine, task.id, expect_status="agent-review")
    first = env.get(task.id)
    assert (first.status, first.int_field("crash_count")) == ("agent-review", 1)
    assert first.int_field("review_round") == 1  # the same round, respawned
    run_2 = first.str_field("agent_run")
    assert run_2 not in ("", "run-1")

    env.recorder.clear()
    said = handle_dead_session(env.engine, task.id, expect_status="agent-review")
    assert said.startswith("escalated agent-review -> stuck")
    after = env.get(task.id)
    assert (after.status, after.int_field("crash_count")) == ("stuck", 0)
    applied = [c.action for c in env.recorder.calls if c.phase == "apply"]
    assert applied == ["kill_reviewer", "notify_worker"]  # the worker hears of stuck


def test_a_respawn_after_a_crash_clears_the_mark_so_the_next_death_counts(env: Env) -> None:
    """`dead_run` pins the handled death to one agent run: a new run dies anew."""
    task = env.make_task("working", body=NOTES, agent_run="run-1")
    handle_dead_session(env.engine, task.id)
    assert env.get(task.id).str_field("dead_run") == "run-1@working"
    env.engine.respawn(task.id)
    assert handle_dead_session(env.engine, task.id).startswith("escalated")


def test_a_failing_advance_asks_for_attention_and_moves_nothing(env: Env) -> None:
    task = env.make_task("working", body=HANDOFF, agent_run="run-1")
    env.recorder.fail[("spawn_reviewer", "prepare")] = "no reviewer harness"
    said = handle_dead_session(env.engine, task.id, expect_status="working")
    assert said.startswith("failed:") and "no reviewer harness" in said
    after = env.get(task.id)
    assert after.status == "working" and after.int_field("review_round") == 0
    assert "no reviewer harness" in after.str_field("attention")


class AliveUnless:
    """A probe: the agent is alive unless it is the run that was seen dead."""

    def __init__(self, dead_run: str) -> None:
        self.dead_run = dead_run

    def is_alive(self, task: Task, agent: str = "") -> bool:
        return task.str_field("agent_run") != self.dead_run

    def started(self, task: Task) -> None:
        return None  # no record of this host's: the ref's agent run is all there is

    def handled(self, task: Task, death: str) -> None:
        pass


def test_two_monitors_racing_on_one_reviewer_death_respawn_it_once(env: Env) -> None:
    task = env.make_task("agent-review", body=HANDOFF, review_round=1, agent_run="run-1")
    probe = AliveUnless("run-1")
    first = Engine(env.store, env.project, registry=env.engine.registry, probe=probe)
    second = Engine(env.store, env.project, registry=env.engine.registry, probe=probe)
    # Both monitors saw run-1 dead in agent-review; the first respawns the reviewer.
    assert "respawned" in handle_dead_session(first, task.id, expect_status="agent-review")
    before = tip(env)
    assert handle_dead_session(second, task.id, expect_status="agent-review") == "nothing to do"
    assert tip(env) == before
    assert env.get(task.id).status == "agent-review"


def test_a_respawn_records_what_the_dead_run_left(env: Env) -> None:
    # The worker died with usage unrecorded, and the monitor has not recorded its
    # death: a person's respawn starts a new run, whose window would begin after it.
    task = env.make_task("working", body=NOTES, agent_run="2026-11-27T10:00:00.000Z-aaaaaa")
    asked: list[str] = []

    class Left:
        def read(self, task: Task, since: str, until: str) -> Usage | None:
            asked.append(since)
            return Usage(1200, 80, 900, "claude-sonnet-4-5", Decimal("0.0051"), 30)

    env.engine.usage = Left()
    env.engine.respawn(task.id)
    respawned = env.get(task.id)
    assert asked == ["2026-11-27T10:00:00.000Z"]  # from the dead run's start
    assert respawned.fields["tokens"] == {"in": 1200, "out": 80, "cache": 900}
    assert respawned.fields["cost_usd"] == "0.005100"
    assert respawned.str_field("agent_run") > respawned.str_field("usage_through")
    assert task_history(env.store, task.id)[-1].event == "agent.respawned"
    tip, parent = git(env.repo, "rev-parse", layout.TASKS_REF, f"{layout.TASKS_REF}~").split()
    # Only the respawn's commit is checked: the task was planted in working.
    assert check_history(env.store.pygit, tip, parent, trusted=trusting(frozenset())) == []
