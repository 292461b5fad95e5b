"""Claude Code's Notification hook (`orange.monitor.notified`), run as Claude Code runs it:
the event on stdin, in the agent's worktree, with the agent's environment.  It names a
waiting agent at once, and only for the task bound to the worktree it runs in, as that
task's agent of the moment (a hostile or confused environment changes nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from orange.home import orange_home
from orange.runtime import waiting
from tests.e2e.conftest import World, wait_for

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]  # holds its pane: the task stays bound
# An agent that shows the first line of its question, then draws what it is sent.
ASKS = ["sh", "-c", "echo 'Which database should I use?'; exec cat", "{prompt}"]


def notify(worktree: Path, kind: str, transcript: Path | None = None, **env: str) -> None:
    event = {
        "hook_event_name": "Notification",
        "notification_type": kind,
        "message": "Claude needs your permission to use Bash\x1b[31m",
        "cwd": str(worktree),
    }
    if transcript is not None:
        event["transcript_path"] = str(transcript)
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


def entry(kind: str, at: float) -> str:
    """One line of Claude Code's session file, as it writes them."""
    stamp = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
    return json.dumps({"type": kind, "timestamp": stamp.replace("+00:00", "Z")}) + "\n"


def test_a_wait_the_hook_named_stays_until_the_person_answers(world: World, tmp_path: Path) -> None:
    # Claude Code notifies while its prompt is still being drawn: the monitor's next
    # look at the finished drawing (other text than the hook saw) is no answer.  Seen
    # once in five runs; here the rest of the prompt is drawn after the hook ran.
    world.set_harness("asks", ASKS)
    task_id = world.create("asks", "A task with a question", "--harness", "asks")
    place = wait_for(lambda: world.task(task_id).str_field("workspace") or None)
    session = world.task(task_id).str_field("tmux_session")
    target = f"{session}:worker"

    def pane() -> tuple[str, int]:
        out = world.tmux("display-message", "-p", "-t", target, "#{pane_id} #{window_activity}")
        pane_id, activity = out.split()
        return pane_id, int(activity)

    wait_for(lambda: "Which database" in world.tmux("capture-pane", "-p", "-t", target))
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(entry("user", time.time() - 60) + entry("assistant", time.time() - 59))
    env = {"ORANGE_TASK_ID": task_id, "ORANGE_AGENT_ROLE": "worker"}
    notify(orange_home() / "workspaces" / place, "idle_prompt", transcript, **env)
    said = world.task(task_id).str_field("attention")
    assert said.startswith("agent (worker) waits on Claude Code's question to you")

    def drawn(text: str) -> None:
        """The pane prints ``text`` in a later second than its last output (tmux stamps
        output by the second), and the monitor reads it."""
        before = pane()[1]
        wait_for(lambda: time.time() >= before + 1.2)
        world.tmux("send-keys", "-t", target, "-l", text)
        world.tmux("send-keys", "-t", target, "Enter")
        wait_for(lambda: text in world.tmux("capture-pane", "-p", "-t", target))
        now = pane()

        def read() -> bool:
            look = waiting.read("proj", task_id)
            return look is not None and (look.pane, look.activity) == now

        wait_for(read, 30, "the monitor to read the pane")

    def listed() -> str:
        row = world.ok("task", "list", "--json").json()["tasks"][0]
        return str(row.get("waiting", ""))

    drawn("  1. sqlite   2. postgres")  # the rest of the prompt
    assert (world.task(task_id).str_field("attention"), listed()) == (said, "question to you")
    # Claude Code writes entries it had already made late: stamped before the mark.
    with transcript.open("a") as handle:
        handle.write(entry("user", time.time() - 31) + entry("assistant", time.time() - 30))
    drawn("  3. none")
    assert (world.task(task_id).str_field("attention"), listed()) == (said, "question to you")

    # The person answers: Claude Code writes their reply, and goes on.
    with transcript.open("a") as handle:
        handle.write(entry("user", time.time()))
    drawn("use sqlite")
    wait_for(lambda: world.task(task_id).str_field("attention") == "", 30, "the mark to go")
    assert listed() == ""
