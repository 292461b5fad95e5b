"""A real agent killed in its pane is noticed and started again as the workflow says
(the default workflow respawns a reviewer that died without a verdict), and the task
goes on: with Claude Code, and with pi (another program, another way of starting)."""

from __future__ import annotations

import os
import signal

import pytest

from orange.store import layout
from tests.agents.conftest import settle
from tests.agents.modelserver import ModelServer
from tests.conftest import git
from tests.e2e.conftest import World, wait_for

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine


@pytest.mark.parametrize("harness", ["claude", "pi"])
def test_a_killed_reviewer_is_respawned_and_passes(
    agents: World, model: ModelServer, harness: str
) -> None:
    settle(agents.repo)
    model.script.hold_reviews.add("held")  # the first reviewer reads its prompt, idles
    task_id = agents.create("held", "A task whose reviewer dies", "--harness", harness)
    agents.wait_status(task_id, "agent-review", timeout=WAIT)
    wait_for(lambda: model.asked("# Review:"), WAIT, "the reviewer to answer its prompt")
    asked = model.asked("# Review:")
    session = agents.task(task_id).str_field("tmux_session")
    pane = agents.tmux("list-panes", "-t", f"{session}:review-1", "-F", "#{pane_pid}")
    os.kill(int(pane.split()[0]), signal.SIGKILL)
    model.script.hold_reviews.clear()  # the next reviewer does its review
    task = agents.wait_status(task_id, "reviewing", timeout=WAIT)
    assert model.asked("# Review:") > asked  # a new reviewer was given the prompt
    assert "Verdict: PASS" in task.body
    events = git(agents.repo, "log", "--reverse", "--format=%(trailers:key=Orange-Event,valueonly)",
                 layout.TASKS_REF).split()  # fmt: skip
    assert events[-3:] == ["agent.crashed", "agent.respawned", "status.changed"]
