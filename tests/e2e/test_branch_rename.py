"""Renaming a live task's branch, as the worker prompt asks every agent to (``git branch
-m`` in its worktree, then ``orange task update --branch``), while the monitor runs:
no false death, no crash counted (issue 29: seen once in 16 tries)."""

from __future__ import annotations

import threading

from orange.home import orange_home
from orange.monitor import loop as monitor_loop
from tests.conftest import git, run_orange
from tests.e2e.conftest import World, sessions_on, wait_for
from tests.e2e.test_queue import HOLD

RENAMES = 8


def test_renaming_a_live_tasks_branch_never_counts_a_crash(world: World) -> None:
    world.set_harness("hold", HOLD)
    task_id = world.create("", "Rename my branch", "--harness", "hold")
    bound = wait_for(lambda: world.task(task_id).str_field("workspace"), what="its worktree")
    worktree = orange_home() / "workspaces" / bound
    agent = {"ORANGE_TASK_ID": task_id, "ORANGE_AGENT_ROLE": "worker"}

    stop = threading.Event()
    failures: list[BaseException] = []

    def monitor_passes() -> None:  # passes back to back, besides the monitor's own
        while not stop.is_set():
            try:
                monitor_loop.run_pass()
            except BaseException as exc:  # reported by the test
                failures.append(exc)
                return
            stop.wait(0.02)  # pacing only: leaves the renames some of the two cores

    passes = threading.Thread(target=monitor_passes)
    passes.start()
    try:
        for number in range(RENAMES):
            current = git(worktree, "symbolic-ref", "--short", "HEAD").strip()
            git(worktree, "branch", "-m", current, f"feature/rename-{number}")
            adopted = run_orange("task", "update", "--branch", cwd=worktree, env=agent)
            assert adopted.code == 0, adopted.err
    finally:
        stop.set()
        passes.join()
    assert failures == []
    monitor_loop.run_pass()  # one more, on the settled state

    after = world.task(task_id)
    assert after.branch == f"feature/rename-{RENAMES - 1}"
    assert (after.status, after.fields.get("crash_count") or 0) == ("planning", 0)
    assert after.str_field("attention") == ""
    assert after.str_field("tmux_session") in sessions_on(world.socket)
