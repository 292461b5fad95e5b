"""A new user's first task with a real program: after `orange install --harness X`
no first-use screen holds the agent; without it, the task says within seconds which
screen waits for a person (issue 25, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orange.store.task import Task
from tests.agents.conftest import API_KEY, screens
from tests.agents.modelserver import ModelServer
from tests.e2e.conftest import World, wait_for

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine
SLOW = {"opencode": 900.0}  # opencode needs ~30 s of CPU to start (two starts here)
NOTICED = 30.0  # a screen is named within seconds of showing; the bound is the slow machine


@pytest.mark.parametrize("harness", ["claude", "codex", "opencode", "pi"])
def test_after_install_the_first_task_meets_no_screen(
    agents: World, model: ModelServer, harness: str
) -> None:
    # With ANTHROPIC_API_KEY set (the tier sets it), Claude Code asks once to approve
    # the key; `orange install` records its approval as Claude Code does (the key's
    # last 20 characters in ~/.claude.json).  For opencode and pi it writes Orange's
    # stop plugin / extension, which the program loads at its start.
    agents.ok("install", "--harness", harness, "--yes")
    task_id = agents.create("first", "First task", "--harness", harness)
    task = agents.wait_status(task_id, "reviewing", timeout=SLOW.get(harness, WAIT))
    assert task.str_field("attention") == ""
    if harness == "claude":
        state = json.loads((Path.home() / ".claude.json").read_text())
        assert state["customApiKeyResponses"]["approved"] == [API_KEY[-20:]]


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
    assert waiting_mark(agents) == "folder trust question"
    assert "waiting" in agents.ok("task", "list").out


def test_pi_without_a_provider_is_named_waiting(
    agents: World, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new pi user with no model configured: pi says so in its pane and idles.  (With
    # ANTHROPIC_API_KEY it picks Anthropic's model, fails to connect, and idles on
    # "Retry failed": a screen too, known from the same capture.)
    for name in ("models.json", "settings.json"):
        (Path.home() / ".pi" / "agent" / name).unlink()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    task_id = agents.create("first", "First task", "--harness", "pi")

    def attention() -> str:
        return agents.task(task_id).str_field("attention")

    try:
        said = wait_for(attention, NOTICED + 30, "attention naming pi's screen")
    except AssertionError as failed:
        raise AssertionError(f"{failed}\n{screens(agents)}") from None
    assert "pi's missing API key" in said, f"{said}\n{screens(agents)}"
    assert waiting_mark(agents) == "missing API key"


def test_opencode_that_cannot_reach_its_model_is_named_waiting(agents: World) -> None:
    # opencode shows no first-use screen with a provider configured (and Orange's
    # opencode.json in the worktree allows every tool, so it asks no permission); a
    # provider it cannot reach leaves it on an error, waiting for a person.
    config = Path.home() / ".config" / "opencode" / "opencode.json"
    data = json.loads(config.read_text())
    data["provider"]["scripted"]["options"]["baseURL"] = "http://127.0.0.1:9/v1"  # closed
    config.write_text(json.dumps(data))
    task_id = agents.create("first", "First task", "--harness", "opencode")

    def attention() -> str:
        return agents.task(task_id).str_field("attention")

    try:
        said = wait_for(attention, SLOW["opencode"], "attention naming opencode's screen")
    except AssertionError as failed:
        raise AssertionError(f"{failed}\n{screens(agents)}") from None
    assert "opencode's connection error" in said, f"{said}\n{screens(agents)}"
    assert waiting_mark(agents) == "connection error"


def waiting_mark(agents: World) -> str:
    """The one task's waiting mark in `task list --json`, once there: the mark is this
    host's file, written just after the attention's commit."""

    def mark() -> str:
        [row] = json.loads(agents.ok("task", "list", "--json").out)["tasks"]
        return str(row.get("waiting", ""))

    return wait_for(mark, NOTICED, "the waiting mark")
