"""The dashboard against real git and a real tmux server: driven through a terminal
(a pty) with keys, read with `capture-pane` and `list-clients`."""

from __future__ import annotations

import os
import pty
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from orange.home import orange_home
from orange.runtime.watcher import is_running
from tests.conftest import git, orange_bin
from tests.e2e.conftest import World, press_after_prefix, wait_for

# An agent that stays alive (it prints, then sleeps) until its session is killed.
HOLD = [sys.executable, "-c", "import time; print('HOLDING', flush=True); time.sleep(600)"]


class Terminal:
    """A process on a pseudo-terminal of its own; its output is drained (and kept)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        os.set_blocking(self.master, True)
        subprocess.run(["stty", "cols", "150", "rows", "30"], stdin=slave, check=False)
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
        )
        os.close(slave)
        self.output = b""
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output += data

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


@pytest.fixture
def hourly(world: World) -> World:
    """The project's workflow polls once an hour: only the dashboard's own watch of the
    ref can show a change quickly.  Agents hold until killed."""
    shipped = Path(__file__).parents[2] / "workflows" / "default.yml"
    text = shipped.read_text().replace("poll_interval: 30", "poll_interval: 3600")
    assert "poll_interval: 3600" in text
    (orange_home() / "workflows").mkdir(parents=True, exist_ok=True)
    (orange_home() / "workflows" / "default.yml").write_text(text)
    world.set_harness("hold", [*HOLD, "{prompt}"])
    return world


def _clients(world: World) -> list[str]:
    return world.tmux("list-clients", "-F", "#{client_session}").split()


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_inside_tmux_a_cli_task_appears_enter_switches_and_x_y_cancels(
    hourly: World, terminals: list[Terminal]
) -> None:
    world = hourly
    script = world.repo.parent / "dash.sh"
    exports = "".join(
        f"export {k}={shlex.quote(v)}\n" for k, v in os.environ.items() if k != "TMUX"
    )
    script.write_text(
        f"{exports}cd {shlex.quote(str(world.repo))}\nexec {orange_bin()} dashboard\n"
    )
    world.tmux(
        "new-session",
        "-d",
        "-s",
        "dash",
        "-x",
        "150",
        "-y",
        "30",
        "sh",
        str(script),
        ";",
        "set-option",
        "-w",
        "remain-on-exit",
        "on",
    )
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    terminals.append(
        Terminal(["tmux", "-L", world.socket, "attach", "-t", "=dash"], env, world.repo)
    )

    def screen() -> str:
        return world.tmux("capture-pane", "-p", "-t", "=dash:")

    try:
        wait_for(lambda: "pool 0/2" in screen(), 30, "the dashboard to draw")
    except AssertionError:
        raise AssertionError(screen() + world.tmux("list-sessions")) from None
    task_id = world.create("live-one", "appears live", "--harness", "hold")
    wait_for(lambda: "live-one" in screen() and "alive" in screen(), 30, "the task, live")
    session = world.task(task_id).str_field("tmux_session")
    world.tmux("send-keys", "-t", "=dash:", "o")  # the agent's live output
    wait_for(lambda: "HOLDING" in screen() and "agent output (worker)" in screen(), 20, "o")
    world.tmux("send-keys", "-t", "=dash:", "Escape")
    wait_for(lambda: "appears live" in screen() and "HOLDING" not in screen(), 20, "Esc")
    world.tmux("send-keys", "-t", "=dash:", "Enter")
    wait_for(lambda: _clients(world) == [session], 20, "the client on the task's session")
    press_after_prefix(world.socket, terminals[0].type, b"L")  # switch-client -l: the footer
    wait_for(lambda: _clients(world) == ["dash"], 20, "the client back on the dashboard")
    world.tmux("send-keys", "-t", "=dash:", "x")
    wait_for(lambda: "cancel task" in screen(), 20, "the question")
    world.tmux("send-keys", "-t", "=dash:", "y")
    world.wait_status(task_id, "cancelled", 30)
    world.tmux("send-keys", "-t", "=dash:", "q")


def test_outside_tmux_enter_suspends_attaches_and_resumes_on_detach(
    hourly: World, terminals: list[Terminal]
) -> None:
    world = hourly
    task_id = world.create("held", "a held task", "--harness", "hold")
    session = world.task(task_id).str_field("tmux_session")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    dash = Terminal([orange_bin()], {**env, "TERM": "xterm-256color"}, world.repo)
    terminals.append(dash)
    wait_for(lambda: b"alive" in dash.output, 30, "the dashboard to show the live agent")
    dash.type(b"\r")
    wait_for(lambda: _clients(world) == [session], 20, "tmux attach on the task's session")
    mark = len(dash.output)
    press_after_prefix(world.socket, dash.type, b"d")  # detach: the dashboard comes back
    wait_for(lambda: _clients(world) == [], 20, "the detach")
    wait_for(lambda: b"back from" in dash.output[mark:], 20, "the dashboard again")
    dash.type(b"q")
    assert dash.proc.wait(20) == 0


def test_exit_on_attach_quits_once_the_user_comes_back(
    hourly: World, terminals: list[Terminal]
) -> None:
    world = hourly
    task_id = world.create("held", "a held task", "--harness", "hold")
    session = world.task(task_id).str_field("tmux_session")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    argv = [orange_bin(), "dashboard", "--exit-on-attach"]
    dash = Terminal(argv, {**env, "TERM": "xterm-256color"}, world.repo)
    terminals.append(dash)
    wait_for(lambda: b"alive" in dash.output, 30, "the dashboard to show the live agent")
    dash.type(b"\r")
    wait_for(lambda: _clients(world) == [session], 20, "tmux attach on the task's session")
    press_after_prefix(world.socket, dash.type, b"d")
    assert dash.proc.wait(20) == 0  # no q: it quit by itself


def test_the_dashboard_makes_sure_the_monitor_runs(
    hourly: World, terminals: list[Terminal], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = hourly
    monkeypatch.setenv("ORANGE_MONITOR", "off")  # the task's spawn starts no monitor
    world.create("held", "a held task", "--harness", "hold")
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    assert not is_running()  # an agent to watch, and no monitor watching it
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    dash = Terminal([orange_bin(), "dashboard"], {**env, "TERM": "xterm-256color"}, world.repo)
    terminals.append(dash)
    wait_for(lambda: b"alive" in dash.output, 30, "the dashboard to show the live agent")
    wait_for(is_running, 30, "the monitor, started by the dashboard")
    dash.type(b"q")
    assert dash.proc.wait(20) == 0
    assert is_running()  # it outlives the dashboard: it watches the agents, not the app


# A worker that stays alive through the review: the human's send-back notifies it.
TALK = """\
name: talk
version: 1
description: A worker that stays; a human reviews and sends it back.
initial_statuses: [pending]
states:
  pending: {role: queue, terminal: false}
  working: {terminal: false, respawn_prompt: worker}
  reviewing: {terminal: false, waits_for_human: true}
  done: {terminal: true, role: done}
  cancelled: {terminal: true, role: cancelled}
transitions:
  - from: pending
    to: working
    by: [human, engine]
    hooks:
      - {action: acquire_workspace}
      - {action: spawn_agent, prompt: worker, harness: task, permissions: full}
  - {from: working, to: reviewing, by: [human], hooks: []}
  - from: reviewing
    to: working
    by: [human]
    hooks:
      - {action: notify_worker, message: changes}
  - {from: reviewing, to: done, by: [human], hooks: [{action: release_workspace}]}
  - {from: working, to: cancelled, by: [human], hooks: [{action: kill_session}]}
  - {from: reviewing, to: cancelled, by: [human], hooks: [{action: kill_session}]}
prompts:
  worker: "Work on {summary}"
  changes: "CHANGES-REQUESTED: read the Feedback in TASK.md"
"""

DOWN = b"\x1b[B"


def test_diff_comments_on_two_hunks_reach_the_worker_as_one_notification(
    hourly: World, terminals: list[Terminal]
) -> None:
    world = hourly
    (orange_home() / "workflows" / "talk.yml").write_text(TALK)
    world.ok("project", "update", "proj", "--workflow", "talk")
    task_id = world.create("talk", "two files", "--harness", "hold")
    worktree = orange_home() / "workspaces" / "proj--1"
    for name in ("a.py", "b.py"):
        (worktree / name).write_text(f"{name} line\n")
    git(worktree, "add", "a.py", "b.py")
    git(worktree, "commit", "-qm", "two files")
    world.ok("task", "update", task_id, "--status", "reviewing")
    session = world.task(task_id).str_field("tmux_session")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    dash = Terminal([orange_bin(), "dashboard"], {**env, "TERM": "xterm-256color"}, world.repo)
    terminals.append(dash)
    wait_for(lambda: b"reviewing" in dash.output, 30, "the dashboard")
    dash.type(b"D")
    wait_for(lambda: b"diff against main" in dash.output, 20, "the diff view")
    # Rows: a.py's header, its hunk, its line, b.py's header, its hunk, its line.
    _comment(dash, DOWN, b"split a", 1)
    _comment(dash, DOWN * 3, b"rename b", 2)
    mark = len(dash.output)
    dash.type(b"s")
    try:
        world.wait_status(task_id, "working", 30)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{dash.output[mark:].decode(errors='replace')}") from None
    feedback = world.task(task_id).body.split("## Feedback", 1)[1]
    assert feedback.count("Review comments on the diff:") == 1  # one request-changes
    assert "- a.py:1\n    > +a.py line\n  split a" in feedback  # each hunk quoted
    assert "- b.py:1\n    > +b.py line\n  rename b" in feedback

    def pane() -> str:
        return world.tmux("capture-pane", "-p", "-J", "-t", f"={session}:=worker")

    wait_for(lambda: "CHANGES-REQUESTED" in pane(), 20, "the worker notified")
    assert pane().count("CHANGES-REQUESTED") == 1
    dash.type(b"\x1bq")


def _comment(dash: Terminal, keys: bytes, text: bytes, count: int) -> None:
    """Move the diff's cursor with ``keys``, comment ``text`` there (the ``count``th)."""
    mark = len(dash.output)
    dash.type(keys + b"c")
    wait_for(lambda: b"Comment on" in dash.output[mark:], 20, "the comment box")
    dash.type(text)
    wait_for(lambda: text in dash.output[mark:], 20, "the comment typed")
    dash.type(b"\r")
    wait_for(lambda: b"%d comment(s)" % count in dash.output[mark:], 20, "the comment kept")
