"""The self-review workflow with Claude Code and with pi: the agent works, runs a nested
review session of its own program from its shell, writes its outcome, stops; the stop
hook (pi: the extension `orange install` writes) reports the outcome
(issue 25, item 3: the nested session inherited the worker's environment, the stop
hook blocked each of its stops and it looped)."""

from __future__ import annotations

import pytest

from tests.agents.conftest import settle
from tests.agents.modelserver import ModelServer
from tests.e2e.conftest import World

WAIT = 240.0


@pytest.mark.parametrize("harness", ["claude", "pi"])
def test_self_review_with_a_nested_review_reaches_reviewing(
    agents: World, model: ModelServer, harness: str
) -> None:
    settle(agents.repo)
    agents.ok("install", "--harness", harness, "--yes")  # the stop hook
    agents.ok("project", "update", "proj", "--workflow", "self-review")
    task_id = agents.create("self", "Add a feature", "--harness", harness)
    task = agents.wait_status(task_id, "reviewing", timeout=WAIT)
    assert task.str_field("attention") == ""
    # The nested session answered once and stopped: its stops were not blocked.
    assert model.asked("Review the changes") == 1
