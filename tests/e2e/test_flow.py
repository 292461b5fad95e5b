"""A task from pending to done with real agents in real tmux (issue tests 1–4)."""

from __future__ import annotations

import json

from orange.store import layout
from tests.conftest import git
from tests.e2e.conftest import AGENT, World, commits_on, wait_for


def test_happy_path_to_done_and_merged_with_audit_trail(world: World) -> None:
    world.set_harness("fake", [*AGENT, "--role", "worker", "{prompt}"],
                      [*AGENT, "--role", "reviewer", "--reviews", "PASS", "{prompt}"])  # fmt: skip
    task_id = world.create("feature-a", "Add feature A", "--harness", "fake")
    task = world.wait_status(task_id, "reviewing")
    assert task.int_field("review_round") == 1
    assert "Verdict: PASS" in task.body and "## Plan" in task.body and "## Handoff" in task.body
    worktree = world.task(task_id).str_field("workspace")
    assert worktree == "proj--1"
    world.ok("task", "merge", task_id, "--local")
    done = world.task(task_id)
    assert done.status == "done"
    assert done.str_field("workspace") == "" and done.str_field("tmux_session") == ""
    assert "Add feature" in commits_on(world.repo, "main")
    assert world.tmux("has-session", "-t", "proj/feature-a") == ""
    trail = git(world.repo, "log", "--reverse", "--format=%s", layout.TASKS_REF).splitlines()
    moves = [s.split(": ", 1)[1] for s in trail if " -> " in s]
    assert moves == ["pending -> planning", "planning -> working", "working -> agent-review",
                     "agent-review -> reviewing", "reviewing -> done"]  # fmt: skip
    actors = git(world.repo, "log", "--format=%(trailers:key=Orange-Actor,valueonly)",
                 layout.TASKS_REF)  # fmt: skip
    assert "agent" in actors and "cli" in actors


def test_review_fail_notifies_the_worker_who_fixes_then_pass(world: World) -> None:
    task_id = world.create("feature-b", "Add feature B", "--harness", "fake")
    task = world.wait_status(task_id, "reviewing", timeout=60)
    assert task.int_field("review_round") == 2
    assert "## Review (round 1)" in task.body  # round 1's FAIL kept, readable
    assert "Verdict: PASS" in task.body
    history = commits_on(world.repo, "feature-b")
    assert history[0] == "Fix review findings" and "Add feature" in history
    worker_prompts = world.prompts(task_id, "worker")
    assert len(worker_prompts) == 1  # one persistent worker, notified rather than respawned
    reviews = world.prompts(task_id, "reviewer")
    assert [r.split("Review round: ")[1].split("\n")[0] for r in reviews] == ["1 of 2", "2 of 2"]
    # Round 1's reviewer is ended in the background (its window renamed while Orange
    # waits for its processes to exit, to record its last usage): it goes, bounded.
    wait_for(
        lambda: "review-1" not in world.tmux("list-windows", "-t", "proj/feature-b"),
        30,
        "round 1's reviewer window to go",
    )


def test_pool_of_one_queues_and_spawn_next_starts_the_oldest(world: World) -> None:
    world.set_harness("fake", [*AGENT, "--role", "worker", "{prompt}"],
                      [*AGENT, "--role", "reviewer", "--reviews", "PASS", "{prompt}"])  # fmt: skip
    world.ok("project", "update", "proj", "--pool-size", "1")
    first = world.create("first", "First task", "--harness", "fake")
    second = world.create("second", "Second task", "--harness", "fake", "--no-spawn")
    refused = world.orange("task", "spawn", second)
    assert refused.code == 1 and "in use" in refused.err and first in refused.err
    assert world.status(second) == "pending"
    third = world.ok("task", "create", "third", "Third task", "--harness", "fake")
    assert "queued" in third.out
    world.wait_status(first, "reviewing")
    world.ok("task", "merge", first, "--local")
    # spawn_next started the oldest pending task (second), not the newer one (third).
    started = world.task(second)
    assert started.status != "pending" and started.str_field("workspace") == "proj--1"
    listed = json.loads(world.ok("task", "list", "--json").out)["tasks"]
    waiting = [t["branch"] for t in listed if t["status"] == "pending"]
    assert waiting == ["third"]
