"""Claude Code's own word that it waits for the user (its Notification hook, which
`orange install` registers): the task gets attention at once, naming it, where reading
the pane finds no known screen (a question the model asked in plain words)."""

from __future__ import annotations

import json
from pathlib import Path

from orange.runtime.tmux import Tmux
from tests.agents.conftest import screens, settle
from tests.agents.modelserver import ModelServer
from tests.e2e.conftest import World, wait_for

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine


def test_a_claude_worker_waiting_for_an_answer_gets_attention(
    agents: World, model: ModelServer
) -> None:
    settle(agents.repo)
    agents.ok("install", "--harness", "claude", "--yes")
    # Claude Code tells its hooks an answer waits for the user after this many ms
    # (its global config; 60 s by default).
    state = Path.home() / ".claude.json"
    state.write_text(
        json.dumps(json.loads(state.read_text()) | {"messageIdleNotifThresholdMs": 1000})
    )
    model.script.questions.add("asks")  # the worker answers its prompt and waits
    task_id = agents.create("asks", "A task with a question", "--harness", "claude")

    def attention() -> str:
        return agents.task(task_id).str_field("attention")

    said = wait_for(attention, WAIT, "attention from Claude Code's notification")
    assert "Claude Code's question to you" in said, f"{said}\n{screens(agents)}"
    assert "Claude is waiting for your input" in said
    assert agents.status(task_id) == "planning"
    [row] = json.loads(agents.ok("task", "list", "--json").out)["tasks"]
    assert row["waiting"] == "question to you"
    # The person answers in the pane: Claude Code writes the reply into its transcript
    # (the evidence the monitor waits for), and the mark and attention go while the
    # agent works on the answer (same pane, same state).  It works until the test is
    # done: once idle again Claude Code rightly says again that it waits (1 s here),
    # and the test raced that new wait (it failed once).
    done = agents.repo.parent / "answer-done"
    model.script.answers["use sqlite"] = f"until [ -e {done} ]; do sleep 0.2; done"
    Tmux().send_text(agents.task(task_id).str_field("tmux_session"), "worker", "use sqlite")
    try:
        wait_for(lambda: not attention(), WAIT, "the mark to go once the person answered")
        [row] = json.loads(agents.ok("task", "list", "--json").out)["tasks"]
        assert "waiting" not in row
        assert agents.status(task_id) == "planning"  # not cleared by a move
    finally:
        done.touch()
    wait_for(lambda: model.asked("use sqlite") >= 2, WAIT, "the agent to finish its command")
