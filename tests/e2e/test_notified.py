"""Claude Code's Notification hook (`orange.monitor.notified`), run as Claude Code runs it:
the event on stdin, in the agent's worktree, with the agent's environment.  It names a
waiting agent at once, and only for the task bound to the worktree it runs in, as that
task's agent of the moment (a hostile or confused environment changes nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from orange.home import orange_home
from tests.e2e.conftest import World, wait_for

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]  # holds its pane: the task stays bound


def notify(worktree: Path, kind: str, **env: str) -> None:
    event = {
        "hook_event_name": "Notification",
        "notification_type": kind,
        "message": "Claude needs your permission to use Bash\x1b[31m",
        "cwd": str(worktree),
    }
    done = subprocess.run(
        [sys.executable, "-P", "-m", "orange.monitor.notified"],
        input=json.dumps(event),
        cwd=worktree,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_the_notification_hook_names_its_own_tasks_wait_only(world: World) -> None:
    world.set_harness("hold", HOLD)
    first = world.create("first", "First task", "--harness", "hold")
    second = world.create("second", "Second task", "--harness", "hold")
    pool = orange_home() / "workspaces"
    place = wait_for(lambda: world.task(first).str_field("workspace") or None)
    in_first = pool / place
    assert world.status(first) == "planning"

    # Another task's environment in this worktree, a reviewer while the worker is the
    # agent of the state, a notification that waits for nobody: nothing is said.
    notify(in_first, "permission_prompt", ORANGE_TASK_ID=second, ORANGE_AGENT_ROLE="worker")
    notify(in_first, "permission_prompt", ORANGE_TASK_ID=first, ORANGE_AGENT_ROLE="reviewer")
    notify(in_first, "auth_success", ORANGE_TASK_ID=first, ORANGE_AGENT_ROLE="worker")
    assert world.task(first).str_field("attention") == ""
    assert world.task(second).str_field("attention") == ""

    notify(in_first, "permission_prompt", ORANGE_TASK_ID=first, ORANGE_AGENT_ROLE="worker")
    said = world.task(first).str_field("attention")
    assert said == (
        "agent (worker) waits on Claude Code's permission prompt "
        '("Claude needs your permission to use Bash [31m"): attach and answer'
    )
    listed = {t["id"]: t for t in world.ok("task", "list", "--json").json()["tasks"]}
    assert listed[first]["waiting"] == "permission prompt"
    assert "waiting" not in listed[second]
