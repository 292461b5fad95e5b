"""The crash escalation the stateful test found, pinned step by step (default workflow).

spawn → write ``## Plan`` → the worker dies (the plan moves the task on) → write
``## Handoff`` → the agent dies three times: the first death moves the task to
``agent-review`` (a fresh handoff), the reviewer then dies twice without a verdict
(crash 1: respawned; crash 2 = ``stuck_after``: escalated to ``stuck``).  The last move
is the crash rule's own, not the table's ``agent-review -> stuck`` (which needs a FAIL
review in round 2): seed 000 "Exit Monitoring", DESIGN §4.
"""

from __future__ import annotations

import pytest

from orange.engine.catalog import load_named
from orange.engine.edits import edit_body
from orange.engine.engine import Engine
from orange.engine.gates import set_section
from orange.engine.monitoring import BUSY, handle_dead_session
from orange.engine.tasks import create_task
from orange.errors import GuardFailed, IllegalTransition
from orange.store import layout
from orange.store.events import parse_trailers
from orange.store.history import task_history
from tests.conftest import git
from tests.engine.conftest import Env


def _write(env: Env, task_id: str, heading: str, content: str) -> None:
    edit_body(env.store, task_id, lambda t: set_section(t.body, heading, content), what=heading)


def _log(env: Env) -> list[tuple[str, str, str, str]]:
    """(event, from, to, escalation) of every commit on the tasks ref, oldest first."""
    out = git(env.repo, "log", "--reverse", "--format=%B%x00", layout.TASKS_REF)
    rows = []
    for message in out.split("\x00"):
        if not message.strip():
            continue
        t = parse_trailers(message)
        rows.append(
            (
                t.get("Orange-Event", ""),
                t.get("Orange-From", ""),
                t.get("Orange-To", ""),
                t.get("Orange-Escalation", ""),
            )
        )
    return rows


def _run_sequence(env: Env) -> str:
    task = create_task(env.store, env.project, load_named("default"), summary="do it")
    env.engine.spawn(task.id)
    _write(env, task.id, "## Plan", "APPROACH: small steps\nTOUCHING: src/app.py")
    assert handle_dead_session(env.engine, task.id).startswith("advanced planning -> working")
    _write(env, task.id, "## Handoff", "DONE: the feature")
    results = [handle_dead_session(env.engine, task.id) for _ in range(3)]
    assert results[0].startswith("advanced working -> agent-review"), results
    assert results[1].startswith("respawned the agent of agent-review"), results
    assert results[2].startswith("escalated agent-review -> stuck"), results
    return task.id


def test_three_deaths_after_a_handoff_escalate_to_stuck(env: Env) -> None:
    task_id = _run_sequence(env)

    task = env.get(task_id)
    assert task.status == "stuck"
    assert task.int_field("crash_count") == 0  # reset by the move
    assert task.int_field("review_round") == 1  # one review round; a respawn is not one
    assert _log(env) == [
        ("task.created", "", "pending", ""),
        ("status.changed", "pending", "planning", ""),  # spawn
        ("task.updated", "", "", ""),  # ## Plan
        ("status.changed", "planning", "working", ""),  # death 1: the plan holds
        ("task.updated", "", "", ""),  # ## Handoff
        ("status.changed", "working", "agent-review", ""),  # death 2: the handoff holds
        ("agent.crashed", "", "", ""),  # death 3: no verdict, crash 1
        ("agent.respawned", "", "", ""),
        ("agent.crashed", "", "", ""),  # death 4: no verdict, crash 2 = stuck_after
        ("status.changed", "agent-review", "stuck", "yes"),  # the crash rule's move
    ]
    history = task_history(env.store, task_id)
    crashes = [e for e in history if e.event == "agent.crashed"]
    assert [e.trailers.get("Orange-Fields") for e in crashes] == [
        "dead_run, crash_count",
        "dead_run, crash_count",
    ]
    # The monitor's own writes name it (the respawn's commit takes the engine's actor,
    # which the monitor's engine sets; this one has none).
    decided = [e for e in history[-5:] if e.event != "agent.respawned"]
    assert [e.actor for e in decided] == ["monitor"] * 4
    # The reviewer's window is closed on the way to stuck and the worker is told.
    assert env.recorder.applied()[-2:] == ["kill_reviewer", "notify_worker"]


def test_crash_counts_climb_to_stuck_after_and_reset(env: Env) -> None:
    task_id = _run_sequence(env)
    path = layout.task_path(task_id)
    counts = []
    for line in git(env.repo, "log", "--reverse", "--format=%H", layout.TASKS_REF).split():
        text = git(env.repo, "show", f"{line}:{path}")
        counts.append(next(x for x in text.splitlines() if x.startswith("crash_count:")))
    assert counts[-4:] == ["crash_count: 1", "crash_count: 1", "crash_count: 2", "crash_count: 0"]


def test_the_escalation_is_not_a_move_task_update_may_make(env: Env) -> None:
    task = create_task(env.store, env.project, load_named("default"), summary="do it")
    env.engine.spawn(task.id)
    with pytest.raises(IllegalTransition):  # planning -> stuck is the monitor's alone
        env.engine.transition(task.id, "stuck")
    _write(env, task.id, "## Plan", "APPROACH: a\nTOUCHING: b")
    env.engine.transition(task.id, "working")
    _write(env, task.id, "## Handoff", "DONE: c")
    env.engine.transition(task.id, "agent-review")
    _write(env, task.id, "## Review", "Verdict: FAIL\n\nno")
    tip = git(env.repo, "rev-parse", layout.TASKS_REF)
    with pytest.raises(GuardFailed):  # the table's move to stuck needs round 2
        env.engine.transition(task.id, "stuck")
    assert git(env.repo, "rev-parse", layout.TASKS_REF) == tip
    assert env.get(task.id).status == "agent-review"


def _working(env: Env) -> str:
    """A default-workflow task spawned and moved to working with a plan."""
    task = create_task(env.store, env.project, load_named("default"), summary="do it")
    env.engine.spawn(task.id)
    _write(env, task.id, "## Plan", "APPROACH: a\nTOUCHING: b")
    env.engine.transition(task.id, "working")
    return task.id


def test_a_worker_that_dies_twice_without_a_handoff_escalates(env: Env) -> None:
    """The ``crash`` rule (working: no handoff, stuck_after 2), with a human respawn
    between the two deaths."""
    task_id = _working(env)
    assert handle_dead_session(env.engine, task_id).startswith("marked dead in working")
    crashed = env.get(task_id)
    assert (crashed.status, crashed.int_field("crash_count")) == ("working", 1)
    assert crashed.str_field("attention")
    env.engine.respawn(task_id)
    assert handle_dead_session(env.engine, task_id).startswith("escalated working -> stuck")
    assert env.get(task_id).status == "stuck"
    assert _log(env)[-4:] == [
        ("agent.crashed", "", "", ""),
        ("agent.respawned", "", "", ""),
        ("agent.crashed", "", "", ""),
        ("status.changed", "working", "stuck", "yes"),
    ]


def test_a_death_is_looked_at_again_after_the_task_comes_back(env: Env) -> None:
    """The worker dies in working (crash 1); a human takes the task through
    clarification back to planning, writes a plan; the monitor finds the dead worker
    in planning and the plan moves the task to working.  The worker is still dead, so
    the monitor must act on it in this visit of working too (here: no fresh handoff,
    a crash).  It used to answer "nothing to do" (the handled death, ``dead_run``,
    survived the status changes) and leave the task in working with a dead agent."""
    task_id = _working(env)
    handle_dead_session(env.engine, task_id)  # crash 1 in working
    env.engine.transition(task_id, "clarification")
    env.engine.transition(task_id, "planning")
    _write(env, task_id, "## Plan", "APPROACH: again\nTOUCHING: b")
    assert handle_dead_session(env.engine, task_id).startswith("advanced planning -> working")
    result = handle_dead_session(env.engine, task_id)
    assert result.startswith("marked dead in working"), result
    assert env.get(task_id).str_field("attention")
    # Marked, not counted: the plan's move already answered this death (issue 25).
    assert env.get(task_id).int_field("crash_count") == 0


def test_a_death_that_moved_the_task_on_is_not_counted_again(env: Env) -> None:
    """Issue 25, finding 6: one worker death was advanced planning -> working (its plan
    present) and then counted as a crash in working.  It is marked there, with why, and
    the next agent run's death counts as ever."""
    task = create_task(env.store, env.project, load_named("default"), summary="do it")
    env.engine.spawn(task.id)
    _write(env, task.id, "## Plan", "APPROACH: small steps\nTOUCHING: src/app.py")
    assert handle_dead_session(env.engine, task.id).startswith("advanced planning -> working")
    result = handle_dead_session(env.engine, task.id)
    assert result.startswith("marked dead in working (it died in planning, "), result
    marked = env.get(task.id)
    assert (marked.status, marked.int_field("crash_count")) == ("working", 0)
    assert "it died in planning, and that death moved the task here" in marked.str_field(
        "attention"
    )
    assert handle_dead_session(env.engine, task.id) == "nothing to do"  # handled once
    env.engine.respawn(task.id)
    assert handle_dead_session(env.engine, task.id).startswith("marked dead in working")
    assert env.get(task.id).int_field("crash_count") == 1  # a new run: counted
    assert _log(env)[-4:] == [
        ("status.changed", "planning", "working", ""),
        ("agent.dead", "", "", ""),
        ("agent.respawned", "", "", ""),
        ("agent.crashed", "", "", ""),
    ]


def test_the_monitor_leaves_a_task_alone_while_a_move_of_it_is_carried_out(env: Env) -> None:
    """Between the commit that starts an agent (a new run) and its start, the old pane
    is still dead: a monitor looking then must not count a crash against the new run."""
    task_id = _working(env)
    mover = Engine(env.store, env.project, registry=env.engine.registry)  # another process
    tip = git(env.repo, "rev-parse", layout.TASKS_REF)
    with mover.busy(task_id):
        assert handle_dead_session(env.engine, task_id) == BUSY  # the monitor looks again
        assert git(env.repo, "rev-parse", layout.TASKS_REF) == tip
    assert handle_dead_session(env.engine, task_id).startswith("marked dead in working")
