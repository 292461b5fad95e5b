"""Two codex tasks at once: each agent's commands run as that task's agent (issue 25,
item 1: one shared app-server daemon ran every TUI's commands with the first one's
environment, so task B's `orange task update` moved task A)."""

from __future__ import annotations

from tests.agents.conftest import settle
from tests.agents.modelserver import ModelServer
from tests.conftest import git
from tests.e2e.conftest import World, wait_for

WAIT = 300.0


def test_two_codex_tasks_each_act_as_themselves(agents: World, model: ModelServer) -> None:
    settle(agents.repo)
    first = agents.create("first", "First feature", "--harness", "codex")
    # The second starts once the first codex runs (and would have started its daemon).
    wait_for(lambda: model.asked("# Task:"), WAIT, "the first agent to call the model")
    second = agents.create("second", "Second feature", "--harness", "codex")
    for task_id in (first, second):
        task = agents.wait_status(task_id, "reviewing", timeout=WAIT)
        assert task.int_field("review_round") == 1
        # The line the agent's shell wrote names the task that shell ran for.
        branch = task.str_field("branch")
        assert git(agents.repo, "show", f"{branch}:feature.txt") == f"feature by {task_id}\n"
