"""Two writers of one body: the agent's TASK.md copy in its worktree and everyone else
through the ref.  A conflicting edit of the same section on both sides keeps both
versions and sets attention (DESIGN §3); neither side's words are dropped."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_orange
from tests.e2e.conftest import World

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


def test_a_conflicting_edit_in_the_copy_and_through_task_edit_keeps_both(world: World) -> None:
    world.set_harness("hold", HOLD)
    task_id = world.create("conflict", "Keep both", "--harness", "hold")
    world.wait_status(task_id, "planning")
    shown = json.loads(world.ok("task", "show", task_id, "--json").out)
    copy = Path(shown["workspace_path"]) / "TASK.md"
    world.edit(task_id, "Notes", "the first words\n")  # synced to the copy: the base
    assert "the first words" in copy.read_text()

    copy.write_text(copy.read_text().replace("the first words", "the agent's words"))
    world.edit(task_id, "Notes", "the human's words\n")
    # The agent's next command takes its copy in.
    agent = {"ORANGE_TASK_ID": task_id, "ORANGE_AGENT_ROLE": "worker"}
    cwd = Path(shown["workspace_path"])
    result = run_orange("task", "update", "--summary", "still here", cwd=cwd, env=agent)
    assert result.code == 0, result.err
    task = world.task(task_id)
    assert "the agent's words" in task.body
    assert "the human's words" in task.body
    assert task.str_field("attention")
