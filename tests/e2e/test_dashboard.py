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
from tests.conftest import orange_bin
from tests.e2e.conftest import World, wait_for

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
    terminals[0].type(b"\x02L")  # prefix L: tmux's switch-client -l, as the footer says
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
    dash.type(b"\x02d")  # detach: the dashboard comes back
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
    dash.type(b"\x02d")
    assert dash.proc.wait(20) == 0  # no q: it quit by itself
