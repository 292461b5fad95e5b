"""The opencode plugin and the pi extension `orange install` writes: loaded in node with a
stub of the tool's API, pointed at a worktree whose task (a fake `orange` here) is a
self-review worker's, still working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orange.agent_hooks.idle import IDLE_HOOK_DIRS
from orange.ops import install as install_module
from orange.ops.install import install
from tests.node import DRIVE, node

# Plays `orange` for the check: `task show` says the task is a self-review worker's,
# still working (stuck once `task stuck` was called); every other call is appended to
# CALLS.
FAKE_ORANGE = """#!__PYTHON__
import json, os, sys
if sys.argv[1:3] == ["task", "show"]:
    stuck = os.path.exists(__CALLS__) and '"stuck"' in open(__CALLS__).read()
    status = "stuck" if stuck else "working"
    print(json.dumps({"id": sys.argv[3], "workflow": "self-review", "status": status}))
else:
    with open(__CALLS__, "a") as out:
        out.write(json.dumps(sys.argv[1:]) + "\\n")
"""
FILES = {kind: f"{folder}/orange-stop.js" for kind, folder in IDLE_HOOK_DIRS.items()}


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    record = tmp_path / "calls.jsonl"
    fake = tmp_path / "fake-orange"
    fake.write_text(
        FAKE_ORANGE.replace("__PYTHON__", sys.executable).replace("__CALLS__", repr(str(record)))
    )
    fake.chmod(0o755)
    monkeypatch.setattr(install_module, "_orange_bin", lambda: str(fake))
    return record


def drive(kind: str, home: Path, tmp_path: Path, steps: list[dict[str, Any]]) -> list[list[Any]]:
    """Stop the agent once per step, as ``kind`` does; what the file sent at each stop."""
    worktree = tmp_path / "worktree"
    if not worktree.exists():  # a git checkout: the hook counts refusals in its git dir
        subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    out = tmp_path / "sent.json"
    env = {**os.environ, "ORANGE_TASK_ID": "abc", "ORANGE_AGENT_ROLE": "worker"}
    args = [kind, str(home / FILES[kind]), str(tmp_path / "steps.json"), str(out)]
    done = subprocess.run(
        [node(), str(DRIVE), *args], cwd=worktree, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    sent: list[list[Any]] = json.loads(out.read_text())
    return sent


def texts(kind: str, sent: list[Any]) -> list[str]:
    if kind == "opencode":
        return [part["text"] for call in sent for part in call["body"]["parts"]]
    return [call["content"] for call in sent]


@pytest.mark.parametrize("kind", ["opencode", "pi"])
def test_reminders_stop_after_three_in_a_row(
    kind: str, calls: Path, hermetic: Path, tmp_path: Path
) -> None:
    install(kind)
    none: dict[str, Any] = {"outcome": None}
    sent = drive(kind, hermetic, tmp_path, [none, none, none, none, none])
    assert [len(step) for step in sent] == [1, 1, 1, 0, 0]
    first, _, last = (texts(kind, step)[0] for step in sent[:3])
    assert first.startswith("Orange: task abc has no outcome: ")
    assert last.startswith(first)
    assert "reminded you 3 times in a row and will not remind you again" in last
    # The check itself let the fourth stop through and handed the task to a person.
    [[*command, reason]] = [json.loads(line) for line in calls.read_text().splitlines()]
    assert command == ["task", "stuck", "abc"]
    assert reason.startswith("--reason=Orange's stop hook refused this agent's stop 3 times")


@pytest.mark.parametrize("kind", ["opencode", "pi"])
def test_the_documented_call_shape_and_a_reported_outcome(
    kind: str, calls: Path, hermetic: Path, tmp_path: Path
) -> None:
    install(kind)
    steps: list[dict[str, Any]] = [
        {"outcome": None},
        {"outcome": '{"id": "abc", "outcome": "passed"}'},
    ]
    [[call], after] = drive(kind, hermetic, tmp_path, steps)
    if kind == "opencode":
        assert call["path"] == {"id": "ses_worker"}
        assert [part["type"] for part in call["body"]["parts"]] == ["text"]
    else:
        assert call["options"] == {"deliverAs": "followUp"}
    assert after == []
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [
        ["task", "complete", "abc"]
    ]


def test_an_opencode_subagent_going_idle_is_not_reminded(
    calls: Path, hermetic: Path, tmp_path: Path
) -> None:
    install("opencode")
    sent = drive("opencode", hermetic, tmp_path, [{"outcome": None, "parentID": "ses_worker"}])
    assert sent == [[]]


def test_install_writes_each_file_once_beside_the_users_own(
    calls: Path, hermetic: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orange.cli.install import install as command

    mine = hermetic / ".config/opencode/plugins/mine.js"
    mine.parent.mkdir(parents=True)
    mine.write_text("export const Mine = async () => ({})\n")
    for kind in ("opencode", "pi"):
        command(harness=kind, json_out=True)
        first = json.loads(capsys.readouterr().out)
        assert {"path": str(hermetic / FILES[kind]), "outcome": "written"} in first["files"]
        assert first["notes"] == [install_module.RELOAD[kind]]
        command(harness=kind, json_out=True)
        again = json.loads(capsys.readouterr().out)
        assert again["notes"] == [] and {f["outcome"] for f in again["files"]} == {"unchanged"}
    assert mine.read_text() == "export const Mine = async () => ({})\n"
