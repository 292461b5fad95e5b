"""No agent waits unseen (issue 25): an agent program that shows a first-use screen and
waits for a person gets its task flagged within seconds, and the flag goes when it moves
on; one that refuses to run as root says why instead of a bare crash.

The program is a stand-in for Claude Code on PATH as ``claude``: it shows the folder
trust question Claude Code 2.1.197 showed in a pane (its exact words), waits for Enter,
then clears the screen and works; as "root" (``STAND_IN_ROOT=1``: the test machine may
not run as root) without ``IS_SANDBOX=1`` it prints Claude Code's refusal and exits 1,
as the real one does with ``--dangerously-skip-permissions``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from orange.home import orange_home
from tests.e2e.conftest import World, wait_for

TRUST_SCREEN = """\
 Accessing workspace:

 {cwd}

 Quick safety check: Is this a project you created or one you trust? (Like your own code, a
 well-known open source project, or work from your team). If not, take a moment to review
 what's in this folder first.

 Claude Code'll be able to read, edit, and execute files here.

 ❯ 1. Yes, I trust this folder
   2. No, exit

 Enter to confirm · Esc to cancel
"""

STAND_IN = f"""#!{sys.executable}
import json, os, sys, time
with open(os.environ["STAND_IN_LOG"], "a") as log:  # how it was started
    print(json.dumps([sys.argv[0], os.environ.get("ORANGE_BIN")]), file=log)
if (
    os.environ.get("STAND_IN_ROOT") == "1"
    and os.environ.get("IS_SANDBOX") != "1"
    and "--dangerously-skip-permissions" in sys.argv
):
    print("--dangerously-skip-permissions cannot be used with root/sudo privileges "
          "for security reasons", file=sys.stderr)
    sys.exit(1)
print({TRUST_SCREEN!r}.format(cwd=os.getcwd()), flush=True)
sys.stdin.readline()
print("\\x1b[2J\\x1b[H", end="", flush=True)
while True:  # working: output now and then
    print("working on the task", flush=True)
    time.sleep(0.5)
"""


@pytest.fixture
def stand_in(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``claude`` (the stand-in) and a recording ``notify-send`` first on PATH; the
    file the notifications go to."""
    folder = tmp_path / "stand-in-bin"
    folder.mkdir()
    (folder / "claude").write_text(STAND_IN)
    (folder / "claude").chmod(0o755)
    log = tmp_path / "notify-send.log"
    (folder / "notify-send").write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> "{log}"\n')
    (folder / "notify-send").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.setenv("COLUMNS", "250")  # `task list` shows whole marks
    monkeypatch.setenv("STAND_IN_LOG", str(tmp_path / "stand-in.log"))
    return log


def _listed(world: World, task_id: str) -> dict[str, Any]:
    tasks = json.loads(world.ok("task", "list", "--json").out)["tasks"]
    return next(t for t in tasks if t["id"] == task_id)


def test_a_first_use_screen_is_flagged_and_cleared_when_the_agent_moves_on(
    world: World, stand_in: Path
) -> None:
    task_id = world.create("trust-me", "Needs the folder trusted", "--harness", "claude")

    def flagged() -> dict[str, Any] | None:
        listed = _listed(world, task_id)
        return listed if listed.get("waiting") else None

    listed = wait_for(flagged, 40, "the waiting screen to be noticed")
    assert listed["waiting"] == "folder trust question"
    assert "folder trust question" in listed["attention"]
    assert "orange install --harness claude" in listed["attention"]
    assert "\n" not in listed["attention"]
    table = world.ok("task", "list").out
    assert "waiting: folder trust question" in table
    wait_for(lambda: "folder trust question" in _text(stand_in), 30, "a notification")

    session = world.task(task_id).str_field("tmux_session")
    world.tmux("send-keys", "-t", f"={session}:worker", "Enter")

    def cleared() -> dict[str, Any] | None:
        listed = _listed(world, task_id)
        return listed if "waiting" not in listed else None

    listed = wait_for(cleared, 40, "the waiting mark to clear")
    assert not listed.get("attention")
    assert "waiting" not in world.ok("task", "list").out
    assert world.status(task_id) == "planning"  # nothing else happened to the task


def test_the_agent_is_started_by_absolute_path_and_told_where_orange_is(
    world: World, stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook run from an agent's shell, whose PATH may be its profile's (codex's login
    shell), still finds the harness: spawns use the path this host recorded."""
    world.create("by-path", "Started by path", "--harness", "claude")
    log = tmp_path / "stand-in.log"
    started = wait_for(lambda: log.exists() and log.read_text().splitlines(), 40, "a start")
    argv0, orange_bin = json.loads(started[0])
    assert argv0 == str(tmp_path / "stand-in-bin" / "claude")
    assert orange_bin and Path(orange_bin).is_absolute() and os.access(orange_bin, os.X_OK)
    from orange.runtime.harness import resolve

    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # as an agent's login shell might have it
    assert resolve("claude").path() == argv0


def test_claude_as_root_without_is_sandbox_says_why_and_runs_once_it_is_set(
    world: World, stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_ROOT", "1")
    task_id = world.create("as-root", "Runs as root", "--harness", "claude")

    def explained() -> str | None:
        attention = world.task(task_id).str_field("attention")
        return attention if "IS_SANDBOX" in attention else None

    attention = wait_for(explained, 40, "the refusal to be explained")
    assert "root" in attention and "harness_env" in attention
    assert world.status(task_id) == "planning"

    config = yaml.safe_load((orange_home() / "config.yml").read_text())
    config["harness_env"] = {"claude": {"IS_SANDBOX": "1"}}
    (orange_home() / "config.yml").write_text(yaml.safe_dump(config))
    world.ok("task", "respawn", task_id)

    def waiting_on_trust() -> dict[str, Any] | None:  # it got past the refusal
        listed = _listed(world, task_id)
        return listed if listed.get("waiting") == "folder trust question" else None

    wait_for(waiting_on_trust, 40, "the agent to start with IS_SANDBOX=1")


def _text(log: Path) -> str:
    return log.read_text() if log.exists() else ""
