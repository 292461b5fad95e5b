"""A new user's first task with a real program: after `orange install --harness X`
no first-use screen holds the agent; without it, the task says within seconds which
screen waits for a person (issue 25, item 2)."""

from __future__ import annotations

import pytest

from orange.store.task import Task
from tests.agents.conftest import API_KEY, screens
from tests.agents.modelserver import ModelServer
from tests.e2e.conftest import World, wait_for

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine
NOTICED = 30.0  # a screen is named within seconds of showing; the bound is the slow machine


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_after_install_the_first_task_meets_no_screen(
    agents: World, model: ModelServer, harness: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gateway's token rather than an Anthropic API key: Claude Code asks to approve a
    # key once, a question `orange install` leaves to the user (the waiting test covers it).
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", API_KEY)
    agents.ok("install", "--harness", harness, "--yes")
    task_id = agents.create("first", "First task", "--harness", harness)
    task = agents.wait_status(task_id, "reviewing", timeout=WAIT)
    assert task.str_field("attention") == ""


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_without_install_the_waiting_screen_is_named(
    agents: World, model: ModelServer, harness: str
) -> None:
    task_id = agents.create("first", "First task", "--harness", harness)

    def attention() -> Task | None:
        task = agents.task(task_id)
        return task if task.str_field("attention") else None

    task = wait_for(attention, NOTICED + 30, "attention naming the first-use screen")
    said = task.str_field("attention")
    assert "trust" in said.lower(), f"{said}\n{screens(agents)}"  # the folder-trust question
    assert task.status == "planning"
    assert "waiting" in agents.ok("task", "list").out
