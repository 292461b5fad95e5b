"""fresh-worker driven the way real agents drive it: each agent moves its own task from
inside its tmux session (issue 10, item 1)."""

from __future__ import annotations

from tests.e2e.conftest import AGENT, World, wait_for


def _fake_harness(world: World, reviews: str) -> None:
    worker = [*AGENT, "--role", "worker", "{prompt}"]
    reviewer = [*AGENT, "--role", "reviewer", "--reviews", reviews, "{prompt}"]
    world.set_harness("fake", worker, reviewer)


def test_agents_moving_their_own_task_hand_over_to_a_new_session(world: World) -> None:
    """The worker's `--status agent-review` kills its own session and the reviewer
    starts in a new one; the reviewer's FAIL -> working does the same for worker_fix.
    Seed 001: the session is killed, then the new agent runs."""
    world.ok("project", "update", "proj", "--workflow", "fresh-worker")
    _fake_harness(world, "FAIL,PASS")
    task_id = world.create("fresh-a", "Add feature A", "--harness", "fake")
    task = world.wait_status(task_id, "reviewing", timeout=60)
    assert task.int_field("review_round") == 2
    assert task.int_field("crash_count") == 0 and not task.str_field("attention")
    reviews = world.prompts(task_id, "reviewer")
    assert [r.split("Review round: ")[1].split("\n")[0] for r in reviews] == ["1 of 2", "2 of 2"]
    workers = world.prompts(task_id, "worker")
    assert len(workers) == 2 and workers[1].startswith("# Fixing Issues: Add feature A")


def test_entering_stuck_tells_the_persistent_worker(world: World) -> None:
    """Default workflow: the reviewer's second FAIL (made from inside its window) moves
    to stuck and the waiting worker is sent the stuck-fix prompt (issue 10, item 2);
    then a human's request-changes from stuck starts a new review cycle."""
    reviewer = [*AGENT, "--role", "reviewer", "--reviews", "FAIL,FAIL", "{prompt}"]
    world.set_harness("fake", [*AGENT, "--role", "worker", "{prompt}"], reviewer)
    task_id = world.create("stuck-a", "Add feature S", "--harness", "fake")
    task = world.wait_status(task_id, "stuck", timeout=60)
    session = task.str_field("tmux_session")

    def told() -> bool:
        return "notified: # Stuck: Add feature S" in world.tmux(
            "capture-pane", "-p", "-t", f"={session}:=worker"
        )

    wait_for(told, 20, "the worker to be sent the stuck-fix prompt")
    world.ok("task", "request-changes", task_id, "-m", "Split the change in two")
    # A new cycle: its first FAIL gets a fix round again before the task is stuck.
    wait_for(lambda: world.task(task_id).int_field("review_cycle") == 1, 10, "a new cycle")
    again = world.wait_status(task_id, "stuck", timeout=60)
    assert again.int_field("review_round") == 2
    reviews = world.prompts(task_id, "reviewer")
    rounds = [r.split("Review round: ")[1].split("\n")[0] for r in reviews]
    assert rounds == ["1 of 2", "2 of 2", "1 of 2", "2 of 2"]
