"""Who may move (issue 9, finding 5): a command run with ``ORANGE_AGENT_ROLE`` is the
agent of its task (``ORANGE_TASK_ID``): it moves only that task, only along the moves
its role may take (``by:``), and touches no other task.  In-process CLI, recording
registry (`tests.cli.test_moves`); one case runs the real `orange` process (fast path).
"""

from __future__ import annotations

import io
import re
from importlib.resources import files
from pathlib import Path

import pytest

from orange.engine.caller import AGENT_COMMANDS
from tests.cli import test_moves
from tests.cli.test_moves import HANDOFF_1, PLAN, REVIEW_PASS, Harness, drive
from tests.conftest import Cli, run_orange

# The fixtures of `tests.cli.test_moves`: the CLI with a recording registry.
rec = test_moves.rec
h = test_moves.h


def as_agent(monkeypatch: pytest.MonkeyPatch, task_id: str, role: str = "worker") -> None:
    """The environment Orange gives the processes it starts for an agent."""
    monkeypatch.setenv("ORANGE_TASK_ID", task_id)
    monkeypatch.setenv("ORANGE_AGENT_ROLE", role)


def working_task(h: Harness) -> str:
    task = h.create("feature", "Add the feature")
    drive(h, task, "working")
    return task


def test_the_stuck_detour_is_refused_to_the_worker(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = working_task(h)
    as_agent(monkeypatch, task)
    h.to(task, "stuck")  # asking for help is the worker's move
    refused = h.rejected("task", "update", task, "--status", "reviewing")
    assert refused.err == (
        "orange: stuck -> reviewing is a human move; the worker agent of task "
        f"{task} may not take it (ask a human to run: orange task update {task} "
        "--status reviewing)\n"
    )
    assert h.show(task)["status"] == "stuck"


def test_the_stuck_detour_is_a_human_move(h: Harness) -> None:
    task = working_task(h)
    h.to(task, "stuck")
    h.to(task, "reviewing")


def test_a_worker_cannot_pass_its_own_review(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    task = working_task(h)
    h.edit(task, "Handoff", HANDOFF_1)
    as_agent(monkeypatch, task)
    h.to(task, "agent-review")
    h.edit(task, "Review", REVIEW_PASS)  # the worker writes its own verdict ...
    refused = h.rejected("task", "update", "--status", "reviewing")  # ... and moves
    assert "agent-review -> reviewing is a reviewer or human or engine move" in refused.err
    assert f"the worker agent of task {task} may not take it" in refused.err
    assert h.show(task)["status"] == "agent-review"
    as_agent(monkeypatch, task, "reviewer")
    h.to(task, "reviewing")


@pytest.mark.parametrize(
    "command",
    [
        ("task", "cancel", "{other}", "--yes"),
        ("task", "ack", "{other}"),
        ("task", "update", "{other}", "--summary", "hijacked"),
        ("task", "update", "{other}", "--status", "working"),
        ("task", "update", "{other}", "--branch", "hijacked"),
        ("task", "edit", "{other}", "--section", "Notes", "--file", "-"),
        ("task", "request-changes", "{other}", "-m", "redo it"),
        ("task", "merge", "{other}"),
        ("task", "spawn", "{other}"),
        ("task", "delete", "{done}", "--yes"),
    ],
    ids=lambda c: " ".join(c[1:3]),
)
def test_an_agent_leaves_other_tasks_alone(
    h: Harness, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    own = working_task(h)
    other = h.create("other", "Someone else's task")
    if "merge" in command or "request-changes" in command:
        drive(h, other, "working")
        h.edit(other, "Handoff", HANDOFF_1)
        h.to(other, "agent-review")
        h.edit(other, "Review", REVIEW_PASS)
        h.to(other, "reviewing")
    elif "--status" in command:
        drive(h, other, "planning+plan")
    done = h.create("finished", "A cancelled task")
    h.cli.ok("task", "cancel", done, "--yes")
    before = h.show(other)
    as_agent(monkeypatch, own)
    args = [part.format(other=other, done=done) for part in command]
    monkeypatch.setattr("sys.stdin", io.StringIO("hijacked\n"))  # task edit --file -
    refused = h.rejected(*args)
    name = " ".join(command[:2])
    if name not in AGENT_COMMANDS:  # a human's command, whatever the task (issue 24)
        assert f"an agent may not run `orange {name}`" in refused.err
    else:
        assert f"the worker agent of task {own} may " in refused.err
        assert f"only its own task, not task {other}" in refused.err
    assert h.show(other) == before


def test_orange_actor_never_makes_an_agent_human(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = working_task(h)
    h.to(task, "stuck")
    as_agent(monkeypatch, task)
    for actor in ("human", "cli", "monitor"):
        monkeypatch.setenv("ORANGE_ACTOR", actor)
        h.rejected("task", "update", task, "--status", "reviewing")


def test_an_agent_of_unknown_role_takes_no_move(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = h.create("feature", "Add the feature")
    drive(h, task, "planning+plan")
    for role in ("boss", "human", ""):
        as_agent(monkeypatch, task, role)
        refused = h.rejected("task", "update", task, "--status", "working")
        assert "planning -> working is a worker or human or engine move" in refused.err
        assert "agent of unknown role" in refused.err


def test_the_real_fast_path_keeps_the_rule(h: Harness) -> None:
    """`orange task update --status` runs without typer (`orange.cli.fast`)."""
    task = working_task(h)
    env = {"ORANGE_TASK_ID": task, "ORANGE_AGENT_ROLE": "worker", "ORANGE_ACTOR": "cli"}
    assert run_orange("task", "update", "--status", "stuck", cwd=h.repo, env=env).code == 0
    before = h.tip()
    refused = run_orange("task", "update", "--status", "reviewing", cwd=h.repo, env=env)
    assert refused.code == 1 and refused.err.count("\n") == 1
    assert "stuck -> reviewing is a human move" in refused.err
    assert h.tip() == before


def test_the_plan_gate_is_not_checked_before_who_may_move(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused caller hears who may move, not what the gate wants."""
    task = h.create("feature", "Add the feature")
    h.cli.ok("task", "spawn", task)
    h.edit(task, "Plan", PLAN.replace("APPROACH", "NOTHING"))
    as_agent(monkeypatch, task, "reviewer")
    refused = h.rejected("task", "update", task, "--status", "working")
    assert "is a worker or human or engine move" in refused.err


def test_workflow_show_says_who_may_take_each_move(cli: Cli) -> None:
    out = cli.ok("workflow", "show", "default").out
    rows = [
        [cell.strip() for cell in line.strip("│ ").split("│")]
        for line in out.split("\ntransitions")[1].split("\nexit monitoring")[0].splitlines()
        if line.startswith("│ ") and not line.startswith("│  ")  # not a hook's next line
    ]
    assert rows[18][:3] == ["stuck", "reviewing", "human"]
    assert rows[11][:3] == ["agent-review", "reviewing", "reviewer, human, engine"]
    assert rows[-1][:3] == ["(any active)", "stuck", "engine"]


def test_validate_warns_about_transitions_without_by(cli: Cli, tmp_path: Path) -> None:
    text = (files("orange._workflows") / "minimal.yml").read_text()
    path = tmp_path / "old.yml"
    path.write_text(re.sub(r"(?m)^    by: .*\n", "", text))
    result = cli.ok("workflow", "validate", str(path))
    warnings = result.err.splitlines()
    assert len(warnings) == 9
    assert warnings[1] == (
        f"warning: {path}: transitions[1] (working -> reviewing): by not declared, "
        "inferred [worker, reviewer, human, engine]"
    )
