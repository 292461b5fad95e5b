"""Dependencies between tasks (issue 29): ``after:`` holds a task until each task it
names is merged; the queue passes over it, a human's start is refused in one line, and
the last merge starts it.  Unknown ids and cycles are refused; a pushed ``after`` passes
the hub's field policy."""

from __future__ import annotations

import json
from pathlib import Path

from orange.monitor import loop as monitor_loop
from orange.store.events import Change
from orange.store.store import Snapshot
from tests.conftest import run_orange
from tests.e2e.conftest import World, add_hub, commit_behind_engine, teammate_clone
from tests.e2e.test_queue import PASSING, finish, standing


def test_a_task_waits_for_the_tasks_it_names_until_they_are_merged(world: World) -> None:
    world.set_harness("fake", *PASSING)
    first = world.create("first", "First task", "--harness", "fake")
    made = world.ok("task", "create", "second", "After the first", "--harness", "fake",
                    "--after", first[:6])  # fmt: skip
    second = made.out.split()[2]
    assert f"waiting for {first}" in made.out
    assert world.status(second) == "pending"  # a free worktree, yet it waits
    assert world.task(second).fields["after"] == [first]
    assert standing(world)[second] == {"queue": "waiting"}
    listed = json.loads(world.ok("task", "list", "--json").out)["tasks"]
    assert [t["waiting_for"] for t in listed if t["id"] == second] == [[first]]
    table = {line.split()[0]: line for line in world.ok("task", "list").out.splitlines()}
    assert f"(waiting for {first})" in table[second]

    refused = world.orange("task", "spawn", second)
    assert refused.code == 1
    assert f"task {second} waits for {first}" in refused.err.splitlines()[0]
    assert world.status(second) == "pending"

    finish(world, first)  # the merge's spawn_next starts it
    started = world.task(second)
    assert started.status != "pending" and started.str_field("workspace")


def test_unknown_ids_self_and_cycles_are_refused_in_one_line(world: World) -> None:
    first = world.create("first", "First task", "--no-spawn")
    second = world.create("second", "Second task", "--no-spawn", "--after", first)
    third = world.create("third", "Third task", "--no-spawn", "--after", second)

    # Parked as well: once ``first`` is merged it waits for a human, and says so now.
    table = {line.split()[0]: line for line in world.ok("task", "list").out.splitlines()}
    assert f"(waiting for {first}, then parked)" in table[second]
    listed = json.loads(world.ok("task", "list", "--json").out)["tasks"]
    assert [t.get("parked") for t in listed if t["id"] == second] == [True]

    unknown = world.orange("task", "create", "x", "X", "--no-spawn", "--after", "zzzzzzzz")
    assert unknown.code == 1 and "no task 'zzzzzzzz'" in unknown.err
    assert len(unknown.err.strip().splitlines()) <= 2  # the line, and its hint

    cycle = world.orange("task", "update", first, "--after", third)
    assert cycle.code == 1
    assert f"{first} -> {third} -> {second} -> {first}" in cycle.err
    assert "after" not in world.task(first).fields

    dropped = world.create("dropped", "Dropped task", "--no-spawn")
    world.ok("task", "cancel", dropped, "--yes")
    gone = world.orange("task", "create", "y", "Y", "--no-spawn", "--after", dropped)
    assert gone.code == 1 and f"task {dropped} is cancelled" in gone.err.splitlines()[0]

    itself = world.orange("task", "update", first, "--after", first)
    assert itself.code == 1 and "cannot wait for itself" in itself.err

    world.ok("task", "update", third, "--no-after")
    assert world.task(third).fields.get("after") is None
    assert standing(world)[third] == {"queue": "parked"}


def test_a_pushed_after_passes_the_hubs_field_policy(world: World, tmp_path: Path) -> None:
    hub = add_hub(world, tmp_path)
    theirs, teammate = teammate_clone(world, tmp_path, hub, {"harnesses": world.harnesses})
    mine = world.create("mine", "My task", "--no-spawn")
    world.ok("sync")
    assert run_orange("sync", cwd=theirs, env=teammate).code == 0

    made = run_orange("task", "create", "theirs", "Their task", "--no-spawn", "--after", mine,
                      "--json", cwd=theirs, env=teammate)  # fmt: skip
    assert made.code == 0, made.err
    their_task = str(json.loads(made.out)["id"])
    pushed = run_orange("sync", cwd=theirs, env=teammate)
    assert pushed.code == 0, pushed.err

    world.ok("sync")
    assert world.task(their_task).fields["after"] == [mine]
    assert world.task(their_task).str_field("attention") == ""

    # My task waits for theirs; they cancel theirs: my sync says so, and flags mine.
    later = world.create("later", "After theirs", "--no-spawn", "--after", their_task)
    world.ok("sync")
    cancel = run_orange("task", "cancel", their_task, "--yes", cwd=theirs, env=teammate)
    assert cancel.code == 0, cancel.err
    assert later not in cancel.out  # not the teammate's to flag: this host's task
    assert run_orange("sync", cwd=theirs, env=teammate).code == 0
    synced = world.ok("sync")
    assert f"task {later} waited for {their_task}: it needs attention" in synced.out
    assert world.task(later).str_field("attention").startswith(f"waits for task {their_task}")


def test_a_cancelled_dependency_sets_attention_on_the_tasks_waiting_for_it(world: World) -> None:
    first = world.create("first", "First task", "--no-spawn")
    second = world.create("second", "Second task", "--no-spawn", "--after", first)
    unrelated = world.create("unrelated", "Unrelated", "--no-spawn")

    cancelled = world.ok("task", "cancel", first, "--yes")
    assert f"task {second} waited for {first}: it needs attention" in cancelled.out
    attention = world.task(second).str_field("attention")
    assert attention.startswith(f"waits for task {first}, which was cancelled")
    assert f"orange task update {second} --no-after" in attention
    assert world.task(unrelated).str_field("attention") == ""
    assert world.status(second) == "pending"  # a person decides: nothing else moved


def test_a_cancel_by_any_path_flags_the_waiting_tasks_once(world: World) -> None:
    first = world.create("first", "First task", "--no-spawn")
    second = world.create("second", "Second task", "--no-spawn", "--after", first)
    other = world.create("other", "Other task", "--no-spawn")
    third = world.create("third", "Third task", "--no-spawn", "--after", other)

    moved = world.ok("task", "update", first, "--status", "cancelled")
    assert f"task {second} waited for {first}: it needs attention" in moved.out
    assert world.task(second).str_field("attention").startswith(f"waits for task {first}")
    world.ok("task", "ack", second)
    monitor_loop.run_pass()  # a person acknowledged it: never set again
    assert world.task(second).str_field("attention") == ""

    # A cancel that reached the ref without this host's Orange (a fetch, plain git):
    # the monitor's next pass flags the task waiting for it.
    def cancel(snap: Snapshot) -> Change:
        task = snap.task(other)
        assert task is not None
        done = task.with_fields(status="cancelled")
        return Change(task_id=other, event="status.changed", subject=f"task {other}: cancelled",
                      writes={done.path: done.render().encode()})  # fmt: skip

    commit_behind_engine(world.repo, cancel)
    assert world.task(third).str_field("attention") == ""
    monitor_loop.run_pass()
    assert world.task(third).str_field("attention").startswith(f"waits for task {other}")
