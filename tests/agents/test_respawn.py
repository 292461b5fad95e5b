"""A real agent killed in its pane is noticed and started again with the state's
respawn prompt, and the task goes on to its review."""

from __future__ import annotations

import os
import signal

from orange.store import layout
from tests.agents.conftest import settle
from tests.agents.modelserver import ModelServer
from tests.conftest import git
from tests.e2e.conftest import World, wait_for

WAIT = 120.0


def test_a_killed_claude_worker_is_respawned_and_finishes(
    agents: World, model: ModelServer
) -> None:
    settle(agents.repo)
    model.script.hold.add("held")  # the worker reads its prompt and waits in planning
    task_id = agents.create("held", "A task whose agent dies", "--harness", "claude")
    wait_for(lambda: model.asked("# Task:"), WAIT, "the worker to answer its prompt")
    session = agents.task(task_id).str_field("tmux_session")
    pid = int(agents.tmux("list-panes", "-t", f"{session}:worker", "-F", "#{pane_pid}").split()[0])
    os.kill(pid, signal.SIGKILL)
    task = agents.wait_status(task_id, "reviewing", timeout=WAIT)
    assert model.asked("# Resuming:")  # the respawn prompt, "Status: planning"
    events = git(agents.repo, "log", "--format=%(trailers:key=Orange-Event,valueonly)",
                 layout.TASKS_REF)  # fmt: skip
    assert "agent.crashed" in events.split()
    assert task.str_field("branch") == "held"
