"""A human's request for changes starts a new review cycle (issue 10, item 3), and
entering stuck tells the worker (item 2)."""

from __future__ import annotations

import re

from orange.engine.replay import check_history
from orange.engine.requests import request_changes
from tests.engine.conftest import Env
from tests.engine.test_replay import SHIPPED, _edit, _tip
from tests.engine.test_seed000_table import FAIL, HANDOFF, PASS, PLAN


def _review_round(env: Env, task_id: str, verdict: str) -> None:
    n = len(env.get(task_id).body)  # a new Handoff text each round (a fresh artifact)
    _edit(env, task_id, HANDOFF.replace("the feature", f"step {n}"))
    env.engine.transition(task_id, "agent-review")
    _edit(env, task_id, verdict)


def test_request_changes_resets_the_round_and_labels_archived_reviews_by_cycle(
    env: Env,
) -> None:
    task = env.make_task("planning", body="")
    start = _tip(env)  # the set-up above is written behind the engine
    _edit(env, task.id, PLAN)
    env.engine.transition(task.id, "working")
    _review_round(env, task.id, FAIL)
    env.engine.transition(task.id, "working")
    _review_round(env, task.id, PASS)
    env.engine.transition(task.id, "reviewing")

    request_changes(env.engine, task.id, "Rename the flag.")
    sent_back = env.get(task.id)
    assert (sent_back.status, sent_back.int_field("review_round")) == ("working", 0)
    assert sent_back.int_field("review_cycle") == 1
    _review_round(env, task.id, FAIL)
    assert "Review round: 1 of 2" in env.engine.build_prompt(env.get(task.id), "reviewer")
    env.engine.transition(task.id, "working")  # a fix round, not stuck: round 1 < 2
    _review_round(env, task.id, PASS)
    env.engine.transition(task.id, "reviewing")

    body = env.get(task.id).body
    archived = re.findall(r"^## Review \((.*)\)$", body, flags=re.M)
    assert archived == ["round 1", "round 2", "cycle 2, round 1"]
    assert check_history(env.store.pygit, _tip(env), start, trusted=SHIPPED) == []


def test_request_changes_from_stuck_starts_a_new_cycle(env: Env) -> None:
    task = env.make_task("agent-review", body=HANDOFF + FAIL, review_round=2)
    start = _tip(env)  # the set-up above is written behind the engine
    env.engine.transition(task.id, "stuck")
    assert env.recorder.applied()[-2:] == ["kill_reviewer", "notify_worker"]
    request_changes(env.engine, task.id, "Try the other approach.")
    after = env.get(task.id)
    assert (after.status, after.int_field("review_round")) == ("working", 0)
    assert env.recorder.applied()[-1] == "notify_worker"
    assert check_history(env.store.pygit, _tip(env), start, trusted=SHIPPED) == []
