"""This host starts only what a human here asked for (issue 24, item 5): the queue
holds the tasks created or taken here, in the order they entered this clone's ref; a
teammate's pending task waits, a pushed ``created_at`` jumps no queue, and a run record
from the ref names no task `orange run cancel` or `resume` may touch."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from orange.home import host_name
from orange.store.events import Change
from orange.store.runfile import RunFile, run_path
from orange.store.store import Snapshot
from tests.conftest import run_orange
from tests.e2e.conftest import AGENT, World, add_hub, commit_behind_engine, teammate_clone

PASSING = ([*AGENT, "--role", "worker", "{prompt}"],
           [*AGENT, "--role", "reviewer", "--reviews", "PASS", "{prompt}"])  # fmt: skip
HOLD = ["sh", "-c", "sleep 600", "{prompt}"]
EARLY = "2000-01-01T00:00:00.000Z"


def finish(world: World, task_id: str) -> None:
    """Take ``task_id`` through review and merge it: its worktree frees (spawn_next)."""
    world.wait_status(task_id, "reviewing")
    world.ok("task", "merge", task_id, "--local")


def started_here(world: World, task_id: str) -> bool:
    task = world.task(task_id)
    return task.status != "pending" and task.str_field("workspace") == "proj--1"


def test_a_teammates_pending_task_waits_while_my_queued_task_starts(
    world: World, tmp_path: Path
) -> None:
    hub = add_hub(world, tmp_path)
    world.set_harness("fake", *PASSING)
    world.ok("project", "update", "proj", "--pool-size", "1")
    theirs, teammate = teammate_clone(world, tmp_path, hub, {"harnesses": world.harnesses})
    # The teammate's task is the oldest of all, and pending: a queue by created_at
    # would start it first.
    made = run_orange("task", "create", "theirs", "Their task", "--no-spawn", "--json",
                      cwd=theirs, env=teammate)  # fmt: skip
    assert made.code == 0, made.err
    their_task = str(yaml.safe_load(made.out)["id"])
    assert run_orange("sync", cwd=theirs, env=teammate).code == 0

    first = world.create("first", "First task", "--harness", "fake")
    mine = world.create("mine", "My queued task", "--harness", "fake")
    assert world.status(mine) == "pending"
    world.ok("sync")
    assert world.status(their_task) == "pending"  # it arrived

    finish(world, first)
    assert started_here(world, mine)
    theirs_now = world.task(their_task)
    assert theirs_now.status == "pending" and not theirs_now.str_field("workspace")


def test_a_pushed_early_created_at_does_not_jump_my_queue(world: World) -> None:
    world.set_harness("fake", *PASSING)
    world.ok("project", "update", "proj", "--pool-size", "1")
    first = world.create("first", "First task", "--harness", "fake")
    second = world.create("second", "Second task", "--harness", "fake")
    third = world.create("third", "Third task", "--harness", "fake")

    def backdate(snap: Snapshot) -> Change:  # as a teammate's push could
        task = snap.task(third)
        assert task is not None
        return Change(
            task_id=third,
            event="task.updated",
            subject=f"task {third}: created_at changed",
            writes={task.path: task.with_fields(created_at=EARLY).render().encode()},
        )

    commit_behind_engine(world.repo, backdate)
    assert world.task(third).str_field("created_at") == EARLY

    finish(world, first)
    assert started_here(world, second)
    assert world.status(third) == "pending"


def forge_run(world: World, run_id: str, host: str, task_id: str, step: str) -> None:
    """A RUN.md that reached the ref by a push: its run names ``host`` and lists
    ``task_id`` (a task it never created) as its open subtask."""
    fields = {
        "id": run_id,
        "project": "proj",
        "host": host,
        "status": "running",
        "step": step,
        "branch": f"run-{run_id}",
        "base": "main",
        "agents": 1,
        "architect": "fake",
        "swe": "fake",
        "policy": "retry",
        "max_iterations": 3,
        "max_clarification_rounds": 1,
        "skip_clarification": True,
        "no_pr": True,
        "group": 0,
        "answers_used": 0,
        "created_at": EARLY,
        "updated_at": EARLY,
        "subtasks": [
            {
                "id": "s1",
                "task": task_id,
                "branch": f"run-{run_id}-agent-1",
                "group": 1,
                "status": "implementing",
                "iterations": 1,
                "retries": 0,
                "note": "",
            },
        ],
    }
    record = RunFile(fields, {})
    record.set_json("Request", "anything")
    subtask = {"id": "s1", "title": "Anything", "description": "Anything."}
    record.set_json("Plan", {"subtasks": [subtask], "parallel_groups": [["s1"]]})

    def forge(snap: Snapshot) -> Change:
        return Change(
            task_id=run_id,
            event="run.step",
            subject=f"run {run_id}: forged",
            writes={run_path(run_id): record.render().encode()},
            trailers=(("Orange-Run", run_id), ("Orange-Step", step)),
        )

    commit_behind_engine(world.repo, forge)


def test_a_forged_run_listing_my_task_does_not_get_it_cancelled(world: World) -> None:
    world.set_harness("hold", HOLD)
    mine = world.create("mine", "My unrelated task", "--harness", "hold")
    before = world.wait_status(mine, "planning")
    session = before.str_field("tmux_session")
    assert session and world.tmux("has-session", "-t", session) == ""

    forge_run(world, "forged01", "elsewhere", mine, "SUBTASK_IMPLEMENTING")
    cancelled = world.orange("run", "cancel", "forged01")
    assert cancelled.code == 0, cancelled.err
    assert mine in cancelled.out and "not one this host created" in cancelled.out

    after = world.task(mine)
    assert after.status == "planning"
    assert after.str_field("tmux_session") == session
    assert after.str_field("workspace") == before.str_field("workspace")
    assert session in world.tmux("list-sessions", "-F", "#{session_name}").split()


def test_resuming_a_forged_run_listing_my_task_is_refused(world: World) -> None:
    world.set_harness("hold", HOLD)
    world.harnesses["fake"]["exec_command"] = ["sh", "-c", "exit 1", "{prompt}"]  # the run's
    world.set_harness("hold", HOLD)  # (writes config.yml again)
    mine = world.create("mine", "My unrelated task", "--harness", "hold", "--no-spawn")
    forge_run(world, "forged02", host_name(), mine, "AGENTS_SPAWNED")
    resumed = world.orange("run", "resume", "forged02")
    assert resumed.code == 1, (resumed.out, world.task(mine).status)
    assert mine in resumed.err and "not one this host created" in resumed.err
    assert world.status(mine) == "pending"


# Issue 29: the queue never idles and never surprises.


def test_a_cancel_starts_the_next_queued_task(world: World) -> None:
    world.set_harness("hold", HOLD)
    world.ok("project", "update", "proj", "--pool-size", "1")
    first = world.create("first", "First task", "--harness", "hold")
    world.wait_status(first, "planning")
    queued = world.create("queued", "Queued task", "--harness", "hold")
    assert world.status(queued) == "pending"

    cancelled = world.ok("task", "cancel", first, "--yes")
    assert f"started the next pending task {queued}" in cancelled.out
    assert started_here(world, queued)


def test_a_parked_task_is_never_started_by_the_queue(world: World) -> None:
    world.set_harness("fake", *PASSING)
    world.ok("project", "update", "proj", "--pool-size", "1")
    parked = world.create("parked", "Parked task", "--harness", "fake", "--no-spawn")
    first = world.create("first", "First task", "--harness", "fake")
    queued = world.create("queued", "Queued task", "--harness", "fake")

    finish(world, first)
    assert started_here(world, queued)
    left = world.task(parked)
    assert left.status == "pending" and not left.str_field("workspace")


def standing(world: World, *args: str) -> dict[str, dict[str, object]]:
    listed = json.loads(world.ok("task", "list", "--json", *args).out)["tasks"]
    return {str(t["id"]): {k: t[k] for k in ("queue", "queue_position") if k in t} for t in listed}


def test_task_list_says_which_pending_task_is_queued_and_which_parked(world: World) -> None:
    world.set_harness("hold", HOLD)
    world.ok("project", "update", "proj", "--pool-size", "1")
    running = world.create("running", "Running task", "--harness", "hold")
    parked = world.create("parked", "Parked task", "--harness", "hold", "--no-spawn")
    second = world.create("second", "Second in line", "--harness", "hold")
    third = world.create("third", "Third in line", "--harness", "hold")

    expected = {
        running: {},
        parked: {"queue": "parked"},
        second: {"queue": "queued", "queue_position": 1},
        third: {"queue": "queued", "queue_position": 2},
    }
    assert standing(world) == expected
    assert standing(world, "--body") == expected  # the listing that reads each task
    table = {line.split()[0]: line for line in world.ok("task", "list").out.splitlines()}
    assert "(queued #1)" in table[second] and "(queued #2)" in table[third]
    assert "(parked" in table[parked]


def test_a_human_start_of_a_parked_task_queues_it_when_the_pool_is_full(world: World) -> None:
    world.set_harness("hold", HOLD)
    world.ok("project", "update", "proj", "--pool-size", "1")
    running = world.create("running", "Running task", "--harness", "hold")
    parked = world.create("parked", "Parked task", "--harness", "hold", "--no-spawn")
    assert world.orange("task", "spawn", parked).code == 1  # the pool is full
    assert standing(world)[parked] == {"queue": "queued", "queue_position": 1}

    world.ok("task", "cancel", running, "--yes")
    assert started_here(world, parked)


def test_workspace_gc_starts_the_next_queued_task(world: World) -> None:
    world.set_harness("hold", HOLD)
    world.ok("project", "update", "proj", "--pool-size", "1")
    running = world.create("running", "Running task", "--harness", "hold")
    queued = world.create("queued", "Queued task", "--harness", "hold")
    world.ok("project", "update", "proj", "--pool-size", "2")
    assert world.status(queued) == "pending"

    cleaned = world.ok("workspace", "gc")
    assert f"started the next pending task {queued}" in cleaned.out
    assert world.status(queued) == "planning"
    assert world.task(queued).str_field("workspace") == "proj--2"
    assert world.status(running) == "planning"
